"""§3.2.1 scaled dot-product attention whose mask is stored as integers (``np.int8``, 1 = hidden) and then used as an
index, ``scores[blocked] = -np.inf``: an integer array indexes the first axis (the batch) with its values 0 and 1
instead of selecting entries as a boolean mask would, so every score of sentences 0 and 1 (whichever of the values
0 and 1 occur in the mask; sentence 0 alone for a mask that hides nothing) is set to -inf, those sentences get weights
0 and output 0 everywhere, and in every other sentence no key is hidden at all, where the paper sets to -inf exactly
the scores of the hidden (query, key) pairs (a batch of one sentence with a hidden key raises an IndexError).
Without a mask it is right. The scores, the scale 1/sqrt(d_k), the softmax over the keys and the product with V are
right.

Style: NumPy in float32 (``np.einsum``), boolean *blocked* masks at the boundary cast to int8 for storage;
scaled_dot_product_attention only.
"""

import numpy as np

from conformance import Conventions

F32 = np.float32


def _softmax(s):
    top = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, F32(0)))
    z = e.sum(axis=-1, keepdims=True)
    return np.divide(e, z, out=np.zeros_like(e), where=z > 0)


class EinsumAttention:
    conventions = Conventions(mask="blocked", batch_first=True, dtype="float32", framework="numpy (einsum)")

    def scaled_dot_product_attention(self, q, k, v, mask=None):
        q, k, v = (np.asarray(a, dtype=F32) for a in (q, k, v))
        scores = np.einsum("bqc,bkc->bqk", q, k) / F32(np.sqrt(q.shape[-1]))
        if mask is not None:
            blocked = np.asarray(mask).astype(np.int8)  # 1 = hidden, one byte per entry
            scores[blocked] = -np.inf
        weights = _softmax(scores)
        return np.einsum("bqk,bkc->bqc", weights, v), weights


adapter = EinsumAttention()
