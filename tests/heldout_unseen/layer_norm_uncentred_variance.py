"""§3.1 LayerNorm whose variance is the mean of the squares, mean(x^2), without subtracting the squared mean
(the one-pass formula E[x^2] - E[x]^2 with its second term forgotten), while the numerator is centred:
(x - mu) / sqrt(mean(x^2) + eps), where the paper (Ba et al.) divides by sqrt(mean((x - mu)^2) + eps). Right only
for rows whose mean is 0; the output is shrunk where the features' mean is large.

Style: torch functional code on tensors (no module), float32; layer_norm only.
"""

import numpy as np
import torch

from conformance import Conventions


class Functional:
    conventions = Conventions(mask="keep", dtype="float32", framework="torch (functional)")

    @torch.no_grad()
    def layer_norm(self, x, gamma, beta, eps):
        x, gamma, beta = (torch.as_tensor(np.asarray(a, dtype=np.float32)) for a in (x, gamma, beta))
        mean = x.mean(dim=-1, keepdim=True)
        second_moment = (x * x).mean(dim=-1, keepdim=True)  # the bug: E[x^2] used as the variance
        return (gamma * (x - mean) * torch.rsqrt(second_moment + eps) + beta).numpy()


adapter = Functional()
