"""§3.1 attention sublayer whose residual connection subtracts the sublayer's output: it returns
LayerNorm(x - MultiHead(x, kv, kv)) (a sign slip in the Add step), where the paper's sublayer output is
LayerNorm(x + Sublayer(x)). The multi-head attention (projections, scale, mask, heads, W_O) and the LayerNorm
(mean, biased variance, eps inside the root, gamma, beta) are right; only the sign of the attention's output in the
sum is wrong.

Style: torch functional code (F.layer_norm, F.linear with the canonical matrices transposed, plain
matmuls), boolean keep masks, float32; attention_sublayer only (the code's attention module holds its residual and
norm).
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

from conformance import Conventions


def _t(a):
    return torch.as_tensor(np.asarray(a, dtype=np.float32))


class ResidualAttention:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch (functional)")

    @staticmethod
    def _mha(x, kv, w, h, keep):
        B, Lq, d = x.shape
        dk = d // h

        def lin(t, n):
            b = w.get(f"b_{n}")
            return F.linear(t, w[f"W_{n}"].T, b)

        heads = lambda t: t.view(B, t.shape[1], h, dk).transpose(1, 2)
        q, k, v = heads(lin(x, "Q")), heads(lin(kv, "K")), heads(lin(kv, "V"))
        s = q @ k.transpose(-1, -2) / math.sqrt(dk)
        if keep is not None:
            s = s.masked_fill(~keep[:, None], float("-inf"))
        p = torch.nan_to_num(s.softmax(-1), nan=0.0)
        return lin((p @ v).transpose(1, 2).reshape(B, Lq, d), "O")

    def attention_sublayer(self, x, memory, weights, h, eps, mask):
        w = {k: _t(v) for k, v in weights.items()}
        x = _t(x)
        kv = x if memory is None else _t(memory)
        keep = None if mask is None else torch.as_tensor(np.asarray(mask, dtype=bool))
        with torch.no_grad():
            a = self._mha(x, kv, w, h, keep)
            return F.layer_norm(x - a, (x.shape[-1],), w["norm.gamma"], w["norm.beta"], eps).numpy()


adapter = ResidualAttention()
