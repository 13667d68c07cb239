"""§3.1 LayerNorm whose shift is a copy of the gain: the argument conversions are copy-pasted and the second one
kept the first one's name, ``beta = torch.as_tensor(np.asarray(gamma, ...))``, so the output is
gamma * (x - mu) / sqrt(var + eps) + gamma where the paper's (Ba et al.) is gamma * (x - mu) / sqrt(var + eps) + beta:
the given beta is never read. The statistics (mean and biased variance over the last axis), eps inside the root and
the gain are right; the output is right only where beta equals gamma.

Style: torch in float64, hand-written statistics (``mean``, ``var(unbiased=False)``, ``rsqrt``); layer_norm only.
"""

import numpy as np
import torch

from conformance import Conventions


class TorchLayerNorm:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="torch")

    def layer_norm(self, x, gamma, beta, eps):
        x = torch.as_tensor(np.asarray(x, dtype=np.float64))
        gamma = torch.as_tensor(np.asarray(gamma, dtype=np.float64))
        beta = torch.as_tensor(np.asarray(gamma, dtype=np.float64))
        mu = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, unbiased=False)
        return (gamma * (x - mu) * torch.rsqrt(var + eps) + beta).numpy()


adapter = TorchLayerNorm()
