"""§3.1 LayerNorm that subtracts the mean twice from the numerator: the input is centred in place
(``x -= mu``, on a clone) so that the variance is the right mean((x - mu)^2), but the output line still writes
``(x - mu)``, which is now x - 2 mu: gamma * (x - 2 mu) / sqrt(sigma^2 + eps) + beta, where the paper (Ba et al.)
has gamma * (x - mu) / sqrt(sigma^2 + eps) + beta. Right only for rows whose mean is 0; the output is shifted by
-gamma * mu / sqrt(sigma^2 + eps).

Style: torch code on tensors with in-place ops, float64; layer_norm only.
"""

import torch

from conformance import Conventions


class InPlaceNorm:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="torch")

    def layer_norm(self, x, gamma, beta, eps):
        x = torch.from_numpy(x).clone()
        mu = x.mean(dim=-1, keepdim=True)
        x -= mu
        var = (x * x).mean(dim=-1, keepdim=True)
        out = torch.from_numpy(gamma) * (x - mu) / torch.sqrt(var + eps) + torch.from_numpy(beta)
        return out.numpy()


adapter = InPlaceNorm()
