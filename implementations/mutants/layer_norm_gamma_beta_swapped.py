"""LayerNorm with gamma and beta swapped: beta * (x - mu) / sqrt(sigma^2 + eps) + gamma.

Violates §3.1 as the lesson's Step 3 writes it: LayerNorm(x) = gamma ⊙ (x - mu) / sqrt(sigma^2 + eps) +
beta, "times gamma (1 at the start) plus beta (0)": gamma scales, beta shifts. Loading ``weight`` and
``bias`` into each other's places gives this; at the initial values (gamma 1, beta 0) every output is 1.
"""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class GammaBetaSwapped(NumpyAdapter):
    def layer_norm(self, x, gamma, beta, eps):
        return super().layer_norm(x, beta, gamma, eps)  # the bug: the scale and the shift trade places


adapter = GammaBetaSwapped()
