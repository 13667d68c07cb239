"""§3.2.2/§3.2.3 multi-head attention computed on a (B*h, L, d_k) stack ordered batch-major (example b, head i at
row b*h + i) while the mask is stacked head-major with np.tile (row i*B + b): from the second row on, a head reads
another sentence's padding mask. With one sentence, or identical masks, nothing shows. NumPy with reshape tricks."""

import numpy as np
from _numpy_parts import CONVENTIONS, sdpa


class Adapter:
    conventions = CONVENTIONS

    def multi_head_attention(self, query, key, value, weights, h, mask):
        B, Lq, d = query.shape

        def stack(x, n):
            y = x @ weights[f"W_{n}"] + weights.get(f"b_{n}", 0.0)
            return y.reshape(B, -1, h, d // h).transpose(0, 2, 1, 3).reshape(B * h, -1, d // h)

        keep = None if mask is None else np.tile(mask, (h, 1, 1))  # the bug: np.repeat(mask, h, 0) is meant
        out, p = sdpa(stack(query, "Q"), stack(key, "K"), stack(value, "V"), keep)
        out = out.reshape(B, h, Lq, d // h).transpose(0, 2, 1, 3).reshape(B, Lq, d)
        return out @ weights["W_O"] + weights.get("b_O", 0.0), p.reshape(B, h, Lq, -1)


adapter = Adapter()
