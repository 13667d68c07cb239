"""§3.1 decoder layer whose encoder-decoder attention runs with the *self-attention's* weights: the cross-attention
call was copied from the line above and kept its prefix, ``self._mha(w, "self_attn", y1, memory, src_keep)``, so
the queries from the decoder and the keys and values from the memory are projected with self_attn.W_Q, W_K, W_V,
W_O (and their biases) while cross_attn.* are never read, where the paper's encoder-decoder attention is a separate
multi-head attention with its own projections. The masks (causal and target padding in the self-attention, source
padding in the cross-attention), the queries from the decoder and keys/values from the memory, the FFN and the
three Add & Norm steps are right.

Style: a NumPy class with one method per part (_mha, _norm, _ffn) reading a flat dict of float32 arrays,
boolean keep masks; decoder_layer only.
"""

import numpy as np

from conformance import Conventions

F32 = np.float32


class NumpyDecoderLayer:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="numpy (class)")

    @staticmethod
    def _mha(w, prefix, xq, xkv, keep, h):
        B, Lq, d = xq.shape
        dk = d // h

        def proj(x, n):
            y = x @ w[f"{prefix}.W_{n}"]
            b = w.get(f"{prefix}.b_{n}")
            return y if b is None else y + b

        split = lambda t: t.reshape(B, t.shape[1], h, dk).transpose(0, 2, 1, 3)
        q, k, v = split(proj(xq, "Q")), split(proj(xkv, "K")), split(proj(xkv, "V"))
        s = np.where(keep, q @ k.transpose(0, 1, 3, 2) / F32(np.sqrt(dk)), F32(-np.inf))
        top = s.max(-1, keepdims=True)
        e = np.exp(s - np.where(np.isfinite(top), top, F32(0)))
        z = e.sum(-1, keepdims=True)
        p = np.divide(e, z, out=np.zeros_like(e), where=z > 0)
        return proj((p @ v).transpose(0, 2, 1, 3).reshape(B, Lq, d), "O")

    @staticmethod
    def _norm(w, prefix, x, eps):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return w[f"{prefix}.gamma"] * (x - mu) / np.sqrt(var + F32(eps)) + w[f"{prefix}.beta"]

    @staticmethod
    def _ffn(w, x):
        return np.maximum(x @ w["ffn.W1"] + w["ffn.b1"], F32(0)) @ w["ffn.W2"] + w["ffn.b2"]

    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask):
        w = {name: np.asarray(a, dtype=F32) for name, a in weights.items()}
        y, memory = np.asarray(y, dtype=F32), np.asarray(memory, dtype=F32)
        T = y.shape[1]
        tgt_keep = np.asarray(tgt_mask, dtype=bool)[:, None, None, :] & np.tril(np.ones((T, T), dtype=bool))
        src_keep = np.asarray(src_mask, dtype=bool)[:, None, None, :]
        y1 = self._norm(w, "norm1", y + self._mha(w, "self_attn", y, y, tgt_keep, h), eps)
        y2 = self._norm(w, "norm2", y1 + self._mha(w, "self_attn", y1, memory, src_keep, h), eps)
        return self._norm(w, "norm3", y2 + self._ffn(w, y2), eps).astype(F32)


adapter = NumpyDecoderLayer()
