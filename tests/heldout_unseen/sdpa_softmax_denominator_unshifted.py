"""§3.2.1 attention whose hand-written "stable" softmax subtracts the row maximum in the numerator but sums the
unshifted exponentials in the denominator: exp(s - max(s)) / sum(exp(s)), which is softmax(s) * exp(-max(s)),
where the paper's softmax is exp(s) / sum(exp(s)) (equivalently exp(s - max) / sum(exp(s - max))). The weights no
longer sum to 1 (they sum to exp(-max) of the row); right only for rows whose largest score is 0.

Style: NumPy with an additive mask (0 allowed, -inf blocked), float32; scaled_dot_product_attention only.
"""

import numpy as np

from conformance import Conventions


def stable_softmax(scores):
    top = np.max(scores, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    numerator = np.exp(scores - top)
    denominator = np.sum(np.exp(scores), axis=-1, keepdims=True)  # the bug: not shifted by the max
    return np.divide(numerator, denominator, out=np.zeros_like(numerator), where=denominator > 0)


class AdditiveMask:
    conventions = Conventions(mask="additive", dtype="float32", framework="numpy")

    def scaled_dot_product_attention(self, q, k, v, mask):
        q, k, v = (np.asarray(a, dtype=np.float32) for a in (q, k, v))
        scores = q @ np.swapaxes(k, -1, -2) / np.float32(np.sqrt(q.shape[-1]))
        if mask is not None:
            scores = scores + np.asarray(mask, dtype=np.float32)
        weights = stable_softmax(scores).astype(np.float32)
        return (weights @ v).astype(np.float32), weights


adapter = AdditiveMask()
