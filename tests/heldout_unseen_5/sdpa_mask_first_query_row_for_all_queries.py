"""§3.2.1 scaled dot-product attention that reads only the first query's row of the mask: the code was written
for key-padding masks, whose rows are all alike, and takes ``mask[:, :1, :]`` (query 0's row) and broadcasts it
over every query, where the paper's mask M is applied entry by entry (query i, key j). A padding mask is right; a
causal (or any per-query) mask becomes query 0's row for every query: with a causal mask each query reads key 0
alone (query 0 is right, every later query misses its other past keys and itself). The scores, the 1/sqrt(d_k)
scale, the softmax over the keys and the product with V are right.

Style: torch functional code (torch.bmm, masked_fill with a boolean *blocked* mask, torch.softmax), float32;
scaled_dot_product_attention only.
"""

import math

import numpy as np
import torch

from conformance import Conventions


class PaddingAttention:
    conventions = Conventions(mask="blocked", batch_first=True, dtype="float32", framework="torch (functional)")

    def scaled_dot_product_attention(self, q, k, v, mask):
        q, k, v = (torch.as_tensor(np.asarray(a, dtype=np.float32)) for a in (q, k, v))
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(q.shape[-1])
        if mask is not None:
            blocked = torch.as_tensor(np.asarray(mask, dtype=bool))[:, :1, :]  # (B, 1, Lk): the padded keys
            scores = scores.masked_fill(blocked, float("-inf"))
        weights = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
        return torch.bmm(weights, v).numpy(), weights.numpy()


adapter = PaddingAttention()
