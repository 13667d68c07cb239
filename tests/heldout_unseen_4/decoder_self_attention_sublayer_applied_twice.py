"""§3.1 decoder layer that runs its masked self-attention sublayer twice: the list of sublayers is written
``[self_attention, self_attention, cross_attention, feed_forward]`` (a line duplicated), so the layer computes
y1 = LayerNorm_1(y + SelfAttn(y)), y1' = LayerNorm_1(y1 + SelfAttn(y1)) with the same weights and norm1, then
LayerNorm_2(y1' + CrossAttn(y1', memory)) and LayerNorm_3(. + FFN(.)), where the paper's decoder layer has three
sublayers, each applied once: masked self-attention, encoder-decoder attention, FFN. The masks (causal and padding,
source padding), the attention formula, the FFN and each Add & Norm are right.

Style: NumPy closures: a factory builds one function per sublayer over the layer's weights and the layer folds the
input through the list; keep masks, float64; decoder_layer only.
"""

import numpy as np

from conformance import Conventions


def _softmax(s):
    top = s.max(-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    z = e.sum(-1, keepdims=True)
    return np.divide(e, z, out=np.zeros_like(e), where=z > 0)


def make_sublayers(weights, h, eps):
    w = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}

    def norm(name, x):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return w[f"{name}.gamma"] * (x - mu) / np.sqrt(var + eps) + w[f"{name}.beta"]

    def attend(pre, xq, xkv, keep):
        B, Lq, d = xq.shape
        dk = d // h
        lin = lambda x, n: x @ w[f"{pre}.W_{n}"] + w.get(f"{pre}.b_{n}", 0.0)
        split = lambda x: x.reshape(B, x.shape[1], h, dk).transpose(0, 2, 1, 3)
        q, k, v = split(lin(xq, "Q")), split(lin(xkv, "K")), split(lin(xkv, "V"))
        s = np.where(keep[:, None], q @ k.transpose(0, 1, 3, 2) / np.sqrt(dk), -np.inf)
        ctx = (_softmax(s) @ v).transpose(0, 2, 1, 3).reshape(B, Lq, d)
        return lin(ctx, "O")

    def self_attention(y, memory, self_keep, cross_keep):
        return norm("norm1", y + attend("self_attn", y, y, self_keep))

    def cross_attention(y, memory, self_keep, cross_keep):
        return norm("norm2", y + attend("cross_attn", y, memory, cross_keep))

    def feed_forward(y, memory, self_keep, cross_keep):
        f = np.maximum(y @ w["ffn.W1"] + w["ffn.b1"], 0.0) @ w["ffn.W2"] + w["ffn.b2"]
        return norm("norm3", y + f)

    return [self_attention, self_attention, cross_attention, feed_forward]


class FoldedDecoder:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy (closures)")

    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask):
        y, memory = np.asarray(y, np.float64), np.asarray(memory, np.float64)
        T = y.shape[1]
        tgt_keep, src_keep = np.asarray(tgt_mask, bool), np.asarray(src_mask, bool)
        self_keep = np.tril(np.ones((T, T), dtype=bool))[None] & tgt_keep[:, None, :]
        cross_keep = np.broadcast_to(src_keep[:, None, :], (y.shape[0], T, memory.shape[1]))
        for sublayer in make_sublayers(weights, h, eps):
            y = sublayer(y, memory, self_keep, cross_keep)
        return y


adapter = FoldedDecoder()
