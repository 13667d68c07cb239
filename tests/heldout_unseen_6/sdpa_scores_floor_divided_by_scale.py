"""§3.2.1 scaled dot-product attention whose scale is applied with floor division: ``q @ k^T // np.sqrt(d_k)`` (a
doubled slash) where ``/`` was meant, so each score is floor(q . k / sqrt(d_k)), rounded down to a whole number,
before the softmax: the weights are softmax(floor(QK^T / sqrt(d_k))) V. Scores that differ by less than 1 tie or
are ordered by steps of 1, so the weights are flatter or sharper than the paper's softmax(QK^T / sqrt(d_k)) and keys
with close scores get equal weights. The scale's value (sqrt(d_k)), the mask, the softmax over the keys and the
product with V are right.

Style: NumPy in float64 (``@``, ``np.swapaxes``, ``np.where``), boolean *blocked* masks (True = may not attend);
scaled_dot_product_attention only.
"""

import numpy as np

from conformance import Conventions


def _softmax(s):
    top = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    z = e.sum(axis=-1, keepdims=True)
    return np.divide(e, z, out=np.zeros_like(e), where=z > 0)


class NumpyAttention:
    conventions = Conventions(mask="blocked", batch_first=True, dtype="float64", framework="numpy")

    def scaled_dot_product_attention(self, q, k, v, mask=None):
        q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
        scores = q @ np.swapaxes(k, -1, -2) // np.sqrt(q.shape[-1])
        if mask is not None:
            scores = np.where(np.asarray(mask, dtype=bool), -np.inf, scores)
        weights = _softmax(scores)
        return weights @ v, weights


adapter = NumpyAttention()
