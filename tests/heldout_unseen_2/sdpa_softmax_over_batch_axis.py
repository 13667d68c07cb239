"""§3.2.1 scaled dot-product attention whose softmax runs over the batch axis: the scores are (B, Lq, Lk) and the
code calls ``F.softmax(scores, dim=0)``, so each weight is normalised across the B sentences of the batch at the
same (query, key) index, where the paper's softmax(Q K^T / sqrt(d_k)) normalises each query's row over its keys
(the last axis). With one sentence every weight is 1; the rows of the returned weights do not sum to 1.
The scaling by 1/sqrt(d_k), the -inf mask on hidden keys and the product with V are right.

Style: torch functional code (torch.nn.functional, boolean keep masks, ``masked_fill``), float32;
scaled_dot_product_attention only.
"""

import math

import torch
import torch.nn.functional as F

from conformance import Conventions


class FunctionalAttention:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch")

    def scaled_dot_product_attention(self, q, k, v, mask):
        q, k, v = (torch.from_numpy(a) for a in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            keep = torch.from_numpy(mask)
            scores = scores.masked_fill(~keep, float("-inf"))
        weights = F.softmax(scores, dim=0)
        if mask is not None:
            weights = weights.masked_fill(~keep, 0.0)
        return (weights @ v).numpy(), weights.numpy()


adapter = FunctionalAttention()
