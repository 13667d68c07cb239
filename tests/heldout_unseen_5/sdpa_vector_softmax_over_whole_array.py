"""§3.2.1 scaled dot-product attention with the textbook *vector* softmax, ``np.exp(x - np.max(x)) /
np.sum(np.exp(x - np.max(x)))``, applied to the whole (B, Lq, Lk) score array: without an axis the sum runs over
every entry of the batch (all sentences, all queries, all keys), so the weights are exp(s_bij) / sum_{b,i,j}
exp(s_bij) and all the weights of the batch together sum to 1, where the paper's softmax normalises each query's
row over its keys (each row sums to 1). Within a row the weights are in the right proportions (the same for every
row of the batch: each row is scaled by its share of the total); hidden keys (an additive -inf) still get 0. The
scores, the 1/sqrt(d_k) scale and the product with V are right.

Style: NumPy (a module-level ``softmax`` helper, ``np.matmul`` with ``swapaxes``), additive masks (0 / -inf),
float64; scaled_dot_product_attention only.
"""

import numpy as np

from conformance import Conventions


def softmax(x):
    top = np.max(x)
    e = np.exp(x - (top if np.isfinite(top) else 0.0))
    total = np.sum(e)
    return e / total if total > 0 else np.zeros_like(e)


class Attention:
    conventions = Conventions(mask="additive", batch_first=True, dtype="float64", framework="numpy")

    def scaled_dot_product_attention(self, q, k, v, mask):
        q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
        scores = np.matmul(q, np.swapaxes(k, -1, -2)) / np.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores + np.asarray(mask, dtype=np.float64)
        weights = softmax(scores)
        return np.matmul(weights, v), weights


adapter = Attention()
