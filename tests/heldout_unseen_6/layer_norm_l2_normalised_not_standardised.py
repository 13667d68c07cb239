"""§3.1 LayerNorm that divides the centred input by its Euclidean norm instead of its standard deviation: the code
calls ``F.normalize(x - mu, dim=-1, eps=eps)`` (the library's L2 normalisation, x / max(||x||_2, eps)) for the
standardisation, so the output is gamma * (x - mu) / ||x - mu||_2 + beta = gamma * (x - mu) / (sqrt(d) * sigma) + beta,
where the paper's (Ba et al.) is gamma * (x - mu) / sqrt(sigma^2 + eps) + beta: the normalised rows have norm 1
instead of norm sqrt(d) (variance 1/d instead of 1), sqrt(d) times too small before the gain, and eps clamps the norm
instead of being added to the variance. The mean, the centring, gamma and beta are right.

Style: torch functional code in float32 (``F.normalize``); layer_norm only.
"""

import numpy as np
import torch
import torch.nn.functional as F

from conformance import Conventions


class NormalizeLayerNorm:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch (functional)")

    def layer_norm(self, x, gamma, beta, eps):
        x = torch.as_tensor(np.asarray(x, dtype=np.float32))
        gamma = torch.as_tensor(np.asarray(gamma, dtype=np.float32))
        beta = torch.as_tensor(np.asarray(beta, dtype=np.float32))
        centred = x - x.mean(dim=-1, keepdim=True)
        return (gamma * F.normalize(centred, dim=-1, eps=eps) + beta).numpy()


adapter = NormalizeLayerNorm()
