"""A correct encoder-decoder Transformer for the model-only files of this held-out set (nothing here deviates).

Style: plain NumPy in float32, no framework: the parameters live in one flat ``dict`` under their canonical names
(orientation ``x @ W``), the configuration is a frozen ``dataclass``, every stage is a small function of
``(params, inputs)``, and the masks are *additive* float masks (0 where a key may be read, -inf where it may not)
built inside the model from ``pad_id``; activations batch-first, attention through ``np.einsum``.

Each model-level bug file subclasses ``NumpyTransformer`` and overrides the one method it gets wrong (or passes a
different function to it), then builds its adapter with ``model_adapter(cls)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

from conformance import Conventions

F = np.float32
NEG = np.float32(-np.inf)


@dataclass(frozen=True)
class Cfg:
    src_vocab: int
    tgt_vocab: int
    d_model: int
    h: int
    d_ff: int
    N: int
    eps: float
    attention_bias: bool
    share_embeddings: bool
    tie_output: bool
    pad_id: int
    bos_id: int
    eos_id: int

    @classmethod
    def of(cls, config: dict) -> "Cfg":
        return cls(**{f.name: config[f.name] for f in fields(cls)})


# ---------------------------------------------------------------------------------------------- the formulas
def sinusoid_table(n: int, d: int) -> np.ndarray:
    pos = np.arange(n, dtype=np.float64)[:, None]
    inv = np.power(10000.0, -np.arange(0, d, 2, dtype=np.float64) / d)
    out = np.zeros((n, d))
    out[:, 0::2] = np.sin(pos * inv)
    out[:, 1::2] = np.cos(pos * inv)
    return out.astype(F)


def norm(x, gamma, beta, eps):
    mu = x.mean(-1, keepdims=True)
    var = np.square(x - mu).mean(-1, keepdims=True)
    return (gamma * (x - mu) / np.sqrt(var + F(eps)) + beta).astype(F)


def masked_softmax(scores, additive):
    """scores (..., Lq, Lk) + additive mask; a row with every key hidden gets weights 0."""
    s = scores if additive is None else scores + additive
    top = s.max(-1, keepdims=True)
    top = np.where(np.isfinite(top), top, F(0))
    e = np.exp(s - top)
    total = e.sum(-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0).astype(F)


def mha(p, pre, xq, xkv, additive, h):
    """xq (B, Lq, d), xkv (B, Lk, d), additive (B, 1|Lq, Lk) or None -> out (B, Lq, d), weights (B, h, Lq, Lk)."""
    B, Lq, d = xq.shape
    Lk, dk = xkv.shape[1], d // h

    def proj(x, w):
        y = x @ p[f"{pre}.W_{w}"]
        b = p.get(f"{pre}.b_{w}")
        return y if b is None else y + b

    q = proj(xq, "Q").reshape(B, Lq, h, dk)
    k = proj(xkv, "K").reshape(B, Lk, h, dk)
    v = proj(xkv, "V").reshape(B, Lk, h, dk)
    scores = np.einsum("bqhc,bkhc->bhqk", q, k) / F(math.sqrt(dk))
    w = masked_softmax(scores, None if additive is None else additive[:, None])
    ctx = np.einsum("bhqk,bkhc->bqhc", w, v).reshape(B, Lq, d)
    return proj(ctx, "O"), w


def ffn(p, pre, x):
    return np.maximum(x @ p[f"{pre}.W1"] + p[f"{pre}.b1"], F(0)) @ p[f"{pre}.W2"] + p[f"{pre}.b2"]


def add_norm(p, pre, x, sub, eps):
    return norm(x + sub, p[f"{pre}.gamma"], p[f"{pre}.beta"], eps)


# ---------------------------------------------------------------------------------------------- the model
def canonical_shapes(c: Cfg) -> dict:
    d = c.d_model
    shapes = {}
    if c.share_embeddings:
        shapes["E"] = (c.src_vocab, d)
    else:
        shapes["E_src"], shapes["E_tgt"] = (c.src_vocab, d), (c.tgt_vocab, d)
    if not c.tie_output:
        shapes["W_out"] = (d, c.tgt_vocab)

    def attention(pre):
        for w in "QKVO":
            shapes[f"{pre}.W_{w}"] = (d, d)
        if c.attention_bias:
            for w in "QKVO":
                shapes[f"{pre}.b_{w}"] = (d,)

    def sub_ffn(pre):
        shapes.update({f"{pre}.W1": (d, c.d_ff), f"{pre}.b1": (c.d_ff,), f"{pre}.W2": (c.d_ff, d), f"{pre}.b2": (d,)})

    def layer_norm(pre):
        shapes.update({f"{pre}.gamma": (d,), f"{pre}.beta": (d,)})

    for l in range(c.N):
        attention(f"encoder.{l}.self_attn"), layer_norm(f"encoder.{l}.norm1")
        sub_ffn(f"encoder.{l}.ffn"), layer_norm(f"encoder.{l}.norm2")
    for l in range(c.N):
        attention(f"decoder.{l}.self_attn"), layer_norm(f"decoder.{l}.norm1")
        attention(f"decoder.{l}.cross_attn"), layer_norm(f"decoder.{l}.norm2")
        sub_ffn(f"decoder.{l}.ffn"), layer_norm(f"decoder.{l}.norm3")
    return shapes


class NumpyTransformer:
    """The protocol's Model: evaluation only (no train_step)."""

    def __init__(self, config: dict, seed: int):
        self.c = Cfg.of(config)
        rng = np.random.default_rng(int(seed))
        self.p = {}
        for name, shape in canonical_shapes(self.c).items():
            if name.endswith(".gamma"):
                self.p[name] = np.ones(shape, F)
            elif len(shape) == 1:
                self.p[name] = np.zeros(shape, F)
            else:
                self.p[name] = (rng.standard_normal(shape) / math.sqrt(shape[-1])).astype(F)
        self.maps = {}

    # ---- weights
    def load_weights(self, weights):
        for name in self.p:
            self.p[name] = np.array(weights[name], dtype=F)
        self.after_load()

    def after_load(self):
        pass

    def dump_weights(self):
        return {k: v.copy() for k, v in self.p.items()}

    def unmapped_parameters(self):
        return {}

    # ---- tables
    def table(self, side):
        if self.c.share_embeddings:
            return self.p["E"]
        return self.p["E_src" if side == "src" else "E_tgt"]

    def output_matrix(self):
        return self.table("tgt").T if self.c.tie_output else self.p["W_out"]

    # ---- masks (additive)
    def key_padding(self, ids):
        """ids (B, L) -> (B, 1, L): -inf on padding keys."""
        return np.where(ids == self.c.pad_id, NEG, F(0))[:, None, :].astype(F)

    def future(self, T):
        return np.where(np.tri(T, dtype=bool), F(0), NEG).astype(F)[None]

    # ---- stages
    def embed(self, ids, side):
        d = self.c.d_model
        return (self.table(side)[ids] * F(math.sqrt(d)) + sinusoid_table(ids.shape[1], d)[None]).astype(F)

    def project(self, y):
        return y @ self.output_matrix()

    def encoder_stack(self, x, pad):
        c, p = self.c, self.p
        for l in range(c.N):
            pre = f"encoder.{l}"
            a, self.maps[f"{pre}.self_attn"] = mha(p, f"{pre}.self_attn", x, x, pad, c.h)
            x = add_norm(p, f"{pre}.norm1", x, a, c.eps)
            x = add_norm(p, f"{pre}.norm2", x, ffn(p, f"{pre}.ffn", x), c.eps)
        return x

    def decoder_stack(self, y, memory, self_mask, cross_mask):
        c, p = self.c, self.p
        for l in range(c.N):
            pre = f"decoder.{l}"
            a, self.maps[f"{pre}.self_attn"] = mha(p, f"{pre}.self_attn", y, y, self_mask, c.h)
            y = add_norm(p, f"{pre}.norm1", y, a, c.eps)
            a, self.maps[f"{pre}.cross_attn"] = mha(p, f"{pre}.cross_attn", y, memory, cross_mask, c.h)
            y = add_norm(p, f"{pre}.norm2", y, a, c.eps)
            y = add_norm(p, f"{pre}.norm3", y, ffn(p, f"{pre}.ffn", y), c.eps)
        return y

    # ---- the protocol
    def encode(self, src):
        src = np.asarray(src, dtype=np.int64)
        return self.encoder_stack(self.embed(src, "src"), self.key_padding(src))

    def decode(self, tgt_in, memory, src):
        tgt_in, src = np.asarray(tgt_in, dtype=np.int64), np.asarray(src, dtype=np.int64)
        memory = np.asarray(memory, dtype=F)
        T = tgt_in.shape[1]
        self_mask = self.key_padding(tgt_in) + self.future(T)
        y = self.decoder_stack(self.embed(tgt_in, "tgt"), memory, self_mask, self.key_padding(src))
        return self.project(y).astype(F)

    def forward(self, src, tgt_in):
        return self.decode(tgt_in, self.encode(src), src)

    def attention_weights(self, src, tgt_in):
        self.maps = {}
        self.forward(src, tgt_in)
        return dict(self.maps)

    def next_tokens(self, ys, memory, src):
        return self.decode(ys, memory, src)[:, -1].argmax(-1)

    def greedy_decode(self, src, max_len):
        c = self.c
        src = np.asarray(src, dtype=np.int64)
        memory = self.encode(src)
        ys = np.full((src.shape[0], 1), c.bos_id, dtype=np.int64)
        done = np.zeros(src.shape[0], dtype=bool)
        for _ in range(int(max_len)):
            nxt = np.where(done, c.pad_id, self.next_tokens(ys, memory, src)).astype(np.int64)
            ys = np.concatenate([ys, nxt[:, None]], axis=1)
            done |= nxt == c.eos_id
            if done.all():
                break
        return ys[:, 1:]


class ModelAdapter:
    conventions = Conventions(mask="additive", batch_first=True, dtype="float32", framework="numpy (functional)")

    def __init__(self, model_class):
        self.model_class = model_class

    def build_model(self, config, seed):
        return self.model_class(config, seed)


def model_adapter(model_class=NumpyTransformer) -> ModelAdapter:
    return ModelAdapter(model_class)
