"""§3.2.1 scaled dot-product attention that scales the scores by 1/sqrt(d_v), the width of the values
(``v.shape[-1]``), instead of 1/sqrt(d_k), the width of the queries and keys: softmax(Q K^T / sqrt(d_v)) V.
Right whenever d_k == d_v (every multi-head call of the paper, where both are d_model / h); wrong when the keys
and the values have different widths.

Style: torch.einsum throughout, boolean masks with torch.nn's polarity (True = blocked), float32;
scaled_dot_product_attention only.
"""

import numpy as np
import torch

from conformance import Conventions


class EinsumAttention:
    conventions = Conventions(mask="blocked", dtype="float32", framework="torch (einsum)")

    @torch.no_grad()
    def scaled_dot_product_attention(self, q, k, v, mask):
        q, k, v = (torch.as_tensor(np.asarray(a, dtype=np.float32)) for a in (q, k, v))
        scores = torch.einsum("bqd,bkd->bqk", q, k) * v.shape[-1] ** -0.5  # the bug: d_v where the paper has d_k
        if mask is not None:
            scores = scores.masked_fill(torch.as_tensor(np.asarray(mask, dtype=bool)), float("-inf"))
        weights = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
        return torch.einsum("bqk,bkd->bqd", weights, v).numpy(), weights.numpy()


adapter = EinsumAttention()
