"""LayerNorm divides the variance by d - 1 (torch.var's default) instead of d.

Violates §3.1 / the lesson's Step 3: "σ² their variance (divided by d, not by d − 1)". On the
lesson's example x = (1, 2, 3, 6) it gives (-0.926, -0.463, 0, 1.389) instead of
(-1.069, -0.535, 0, 1.604). A single feature (d = 1) gives 0/0, NaN, as ``torch.var`` does.
"""

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class UnbiasedVariance(NumpyAdapter):
    def layer_norm_variance(self, centred):
        with np.errstate(divide="ignore", invalid="ignore"):
            return (centred**2).sum(-1, keepdims=True) / (centred.shape[-1] - 1)  # the bug: d - 1


adapter = UnbiasedVariance()
