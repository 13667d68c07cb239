"""§3.2.2 multi-head attention that applies the output projection head by head, head_i W_O^(i) + b_O, and sums the
h results: the output bias b_O is added once per head, h * b_O in all, where the paper's MultiHead(Q, K, V) =
Concat(head_1, ..., head_h) W_O (+ b_O once, with attention biases). The sum of the per-head projections is right
(it equals Concat(...) W_O); only the bias is counted h times, so the bug shows only with attention biases and
more than one head.

Style: torch.nn.functional code on a flat dict of tensors (F.linear with transposed weights), float32;
multi_head_attention only.
"""

import numpy as np
import torch
import torch.nn.functional as F

from conformance import Conventions


def _linear(x, w, b):
    return F.linear(x, w.t(), b)


def multi_head(query, key, value, p, h, keep):
    B, Lq, d = query.shape
    d_k = d // h
    q = _linear(query, p["W_Q"], p.get("b_Q")).view(B, Lq, h, d_k).transpose(1, 2)
    k = _linear(key, p["W_K"], p.get("b_K")).view(B, -1, h, d_k).transpose(1, 2)
    v = _linear(value, p["W_V"], p.get("b_V")).view(B, -1, h, d_k).transpose(1, 2)
    scores = torch.matmul(q, k.transpose(-1, -2)) / d_k**0.5
    if keep is not None:
        scores = scores.masked_fill(~keep[:, None], float("-inf"))
    attn = torch.nan_to_num(F.softmax(scores, dim=-1), nan=0.0)
    heads = torch.matmul(attn, v)  # (B, h, Lq, d_k)
    out = torch.zeros(B, Lq, d)
    for i in range(h):
        rows = p["W_O"][i * d_k:(i + 1) * d_k]
        out = out + _linear(heads[:, i], rows, p.get("b_O"))  # the bug: b_O added inside the loop, h times
    return out, attn


class Functional:
    conventions = Conventions(mask="keep", dtype="float32", framework="torch (functional)")

    @torch.no_grad()
    def multi_head_attention(self, query, key, value, weights, h, mask):
        p = {n: torch.as_tensor(np.asarray(a, dtype=np.float32)) for n, a in weights.items()}
        t = [torch.as_tensor(np.asarray(a, dtype=np.float32)) for a in (query, key, value)]
        keep = None if mask is None else torch.as_tensor(np.asarray(mask, dtype=bool))
        out, attn = multi_head(*t, p, int(h), keep)
        return out.numpy(), attn.numpy()


adapter = Functional()
