"""LayerNorm adds eps outside the square root: (x - mu) / (sqrt(sigma^2) + eps).

Violates §3.1 (Ba et al. 2016) as the lesson's Step 3 writes it: gamma * (x - mu) / sqrt(sigma^2 + eps)
+ beta, eps inside the root (as ``torch.nn.LayerNorm`` computes). The two differ most on rows of small
variance, where eps is not negligible next to sigma^2.
"""

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class EpsOutsideRoot(NumpyAdapter):
    def layer_norm_denominator(self, variance, eps):
        return np.sqrt(variance) + eps  # the bug: eps outside the root


adapter = EpsOutsideRoot()
