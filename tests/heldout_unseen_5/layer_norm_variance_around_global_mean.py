"""§3.1 LayerNorm whose variance is centred on the mean of the whole input: the variance is written inline as
``((x - x.mean()) ** 2).mean(-1, keepdim=True)``, and ``x.mean()`` without a dimension is the mean over every
element (all rows, all positions, all features), so sigma^2 = mean_j (x_j - m)^2 = (row variance) + (mu - m)^2 with m
the global mean, where the paper's sigma^2 is each row's own mean_j (x_j - mu)^2. The numerator x - mu uses the
row's mean (right), and so do gamma, beta and eps inside the square root. Right for a single row (or rows sharing
one mean); otherwise every row whose mean differs from the global mean is divided by too large a deviation.

Style: torch in float64 (tensor methods, keepdim statistics), a callable nn-free class; layer_norm only.
"""

import numpy as np
import torch

from conformance import Conventions


class RowNorm:
    def __call__(self, x, gamma, beta, eps):
        t = lambda a: torch.as_tensor(np.asarray(a, dtype=np.float64))
        x, gamma, beta = t(x), t(gamma), t(beta)
        mu = x.mean(-1, keepdim=True)
        var = ((x - x.mean()) ** 2).mean(-1, keepdim=True)
        return (gamma * (x - mu) / torch.sqrt(var + eps) + beta).numpy()


class Adapter:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="torch")

    def __init__(self):
        self.layer_norm = RowNorm()


adapter = Adapter()
