"""§3.1 decoder layer whose second and third LayerNorms have their parameters swapped: the Add & Norm after the
encoder-decoder attention uses norm3.gamma / norm3.beta and the one after the FFN uses norm2.gamma / norm2.beta
(the list of norms indexed [0, 2, 1]), where the paper's layer normalises each sublayer with its own LayerNorm:
norm2 after the encoder-decoder attention, norm3 after the feed-forward network. The attentions, their masks, the
FFN, norm1 and the post-norm residual form are right; with norm2 and norm3 holding equal values nothing shows.

Style: NumPy computing sequence-first ((T, B, d) activations, as torch.nn does), a list of norm parameter pairs,
boolean keep masks, float64; decoder_layer only.
"""

import numpy as np

from conformance import Conventions


def layer_norm(x, gamma, beta, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta


def attend(w, pre, xq, xkv, keep, h):
    """xq (Lq, B, d), xkv (Lk, B, d), keep (B, Lq, Lk) -> (Lq, B, d)."""
    Lq, B, d = xq.shape
    Lk, dk = xkv.shape[0], d // h

    def proj(x, n):
        y = x @ w[f"{pre}.W_{n}"]
        return y + w[f"{pre}.b_{n}"] if f"{pre}.b_{n}" in w else y

    q = proj(xq, "Q").reshape(Lq, B, h, dk)
    k = proj(xkv, "K").reshape(Lk, B, h, dk)
    v = proj(xkv, "V").reshape(Lk, B, h, dk)
    s = np.einsum("qbhc,kbhc->bhqk", q, k) / np.sqrt(dk)
    s = np.where(keep[:, None], s, -np.inf)
    top = s.max(-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    z = e.sum(-1, keepdims=True)
    p = np.divide(e, z, out=np.zeros_like(e), where=z > 0)
    return proj(np.einsum("bhqk,kbhc->qbhc", p, v).reshape(Lq, B, d), "O")


class SeqFirstDecoder:
    conventions = Conventions(mask="keep", batch_first=False, dtype="float64", framework="numpy")

    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask):
        w = weights
        T = y.shape[0]
        norms = [(w[f"norm{i}.gamma"], w[f"norm{i}.beta"]) for i in (1, 3, 2)]
        self_keep = np.tril(np.ones((T, T), dtype=bool))[None] & tgt_mask[:, None, :]
        cross_keep = np.broadcast_to(src_mask[:, None, :], (src_mask.shape[0], T, src_mask.shape[1]))
        y = layer_norm(y + attend(w, "self_attn", y, y, self_keep, h), *norms[0], eps)
        y = layer_norm(y + attend(w, "cross_attn", y, memory, cross_keep, h), *norms[1], eps)
        ff = np.maximum(y @ w["ffn.W1"] + w["ffn.b1"], 0.0) @ w["ffn.W2"] + w["ffn.b2"]
        return layer_norm(y + ff, *norms[2], eps)


adapter = SeqFirstDecoder()
