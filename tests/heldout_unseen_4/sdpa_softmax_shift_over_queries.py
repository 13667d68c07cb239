"""§3.2.1 scaled dot-product attention whose "stable" softmax subtracts the maximum over the wrong axis: the shift is
the largest score of each *key column* (``amax(dim=-2)``, over the queries) instead of each query's row, and the
exponentials are then normalised over the keys: w[q, k] = exp(s[q, k] - c_k) / sum_j exp(s[q, j] - c_j) with
c_k = max_q s[q, k], which is softmax(s[q, :] - c) and not softmax(s[q, :]): each key's score is lowered by a
different amount, where the paper's weights are softmax(Q K^T / sqrt(d_k)) over each query's keys (a shift common
to the whole row changes nothing; a shift per key does). The rows still sum to 1 and hidden keys get 0; right only
when every key column has the same maximum (with a single query, every visible key gets the same weight). Scaling by
1/sqrt(d_k), the mask and the product with V are right.

Style: torch code with a small class per step, boolean blocked masks (True = may not attend), float64;
scaled_dot_product_attention only.
"""

import math

import numpy as np
import torch

from conformance import Conventions


class Scores:
    def __call__(self, q, k):
        return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


class StableSoftmax:
    def __call__(self, s, blocked):
        if blocked is not None:
            s = s.masked_fill(blocked, float("-inf"))
        shift = s.amax(dim=-2, keepdim=True)  # largest score, for overflow safety
        shift = torch.where(torch.isfinite(shift), shift, torch.zeros_like(shift))
        e = torch.exp(s - shift)
        z = e.sum(dim=-1, keepdim=True)
        return torch.where(z > 0, e / torch.where(z > 0, z, torch.ones_like(z)), torch.zeros_like(e))


class Attention:
    conventions = Conventions(mask="blocked", batch_first=True, dtype="float64", framework="torch")

    def __init__(self):
        self.scores, self.softmax = Scores(), StableSoftmax()

    def scaled_dot_product_attention(self, q, k, v, mask):
        t = lambda a: torch.as_tensor(np.asarray(a, dtype=np.float64))
        q, k, v = t(q), t(k), t(v)
        blocked = None if mask is None else torch.as_tensor(np.asarray(mask, dtype=bool))
        w = self.softmax(self.scores(q, k), blocked)
        return (w @ v).numpy(), w.numpy()


adapter = Attention()
