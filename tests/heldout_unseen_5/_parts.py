"""A correct encoder-decoder Transformer for the model-only files of this held-out set (nothing here deviates).

Style: NumPy in float64 written as small module *classes* (``Linear``-like helpers are methods of one model class,
``NumpyModules``), the parameters one flat ``dict`` of arrays under their canonical names (orientation ``x @ W``),
the configuration the protocol's plain ``dict`` read into attributes, the masks boolean *keep* masks (True = may be
read) of shape (B, 1, 1, L) built inside the model from ``pad_id``, activations batch-first, heads made with
``reshape`` + ``transpose`` and ``@``; a query whose keys are all hidden gets weights 0.

Each model-level bug file subclasses ``NumpyModules`` and overrides the one method it gets wrong, then builds its
adapter with ``model_adapter(cls)``.
"""

from __future__ import annotations

import math

import numpy as np

from conformance import Conventions

F64 = np.float64


def parameter_shapes(cfg: dict) -> dict:
    d, d_ff, N = cfg["d_model"], cfg["d_ff"], cfg["N"]
    shapes = {}
    if cfg["share_embeddings"]:
        shapes["E"] = (cfg["src_vocab"], d)
    else:
        shapes["E_src"], shapes["E_tgt"] = (cfg["src_vocab"], d), (cfg["tgt_vocab"], d)
    if not cfg["tie_output"]:
        shapes["W_out"] = (d, cfg["tgt_vocab"])

    def attention(prefix):
        for n in "QKVO":
            shapes[f"{prefix}.W_{n}"] = (d, d)
            if cfg["attention_bias"]:
                shapes[f"{prefix}.b_{n}"] = (d,)

    def norm(prefix):
        shapes[f"{prefix}.gamma"], shapes[f"{prefix}.beta"] = (d,), (d,)

    def ffn(prefix):
        shapes.update({f"{prefix}.W1": (d, d_ff), f"{prefix}.b1": (d_ff,), f"{prefix}.W2": (d_ff, d), f"{prefix}.b2": (d,)})

    for l in range(N):
        attention(f"encoder.{l}.self_attn"), norm(f"encoder.{l}.norm1"), ffn(f"encoder.{l}.ffn"), norm(f"encoder.{l}.norm2")
    for l in range(N):
        attention(f"decoder.{l}.self_attn"), norm(f"decoder.{l}.norm1")
        attention(f"decoder.{l}.cross_attn"), norm(f"decoder.{l}.norm2")
        ffn(f"decoder.{l}.ffn"), norm(f"decoder.{l}.norm3")
    return shapes


def sinusoid_table(n: int, d: int) -> np.ndarray:
    """(n, d): sin(pos / 10000^(2i/d)) in column 2i, cos(pos / 10000^(2i/d)) in column 2i + 1."""
    pos = np.arange(n, dtype=F64)[:, None]
    angle = pos / np.power(10000.0, np.arange(0, d, 2, dtype=F64) / d)[None, :]
    table = np.zeros((n, d), dtype=F64)
    table[:, 0::2] = np.sin(angle)
    table[:, 1::2] = np.cos(angle[:, : d // 2])
    return table


def masked_softmax(scores: np.ndarray, keep) -> np.ndarray:
    """Softmax over the last axis; keys where ``keep`` is False get weight 0 (a row with no key left: all 0)."""
    s = scores if keep is None else np.where(keep, scores, -np.inf)
    top = s.max(-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    z = e.sum(-1, keepdims=True)
    return np.divide(e, z, out=np.zeros_like(e), where=z > 0)


class NumpyModules:
    """The protocol's Model, evaluation only (no train_step)."""

    def __init__(self, config: dict, seed: int):
        self.cfg = dict(config)
        self.d, self.h, self.N, self.eps = config["d_model"], config["h"], config["N"], config["eps"]
        self.pad_id, self.bos_id, self.eos_id = config["pad_id"], config["bos_id"], config["eos_id"]
        rng = np.random.default_rng(int(seed))
        self.p = {}
        for name, shape in parameter_shapes(self.cfg).items():
            if name.endswith(".gamma"):
                self.p[name] = np.ones(shape, dtype=F64)
            elif len(shape) == 1:
                self.p[name] = np.zeros(shape, dtype=F64)
            else:
                self.p[name] = rng.standard_normal(shape) / math.sqrt(shape[0])
        self.maps = {}

    # ---- weights
    def load_weights(self, weights):
        for name in self.p:
            self.p[name] = np.array(weights[name], dtype=F64)

    def dump_weights(self):
        return {name: a.copy() for name, a in self.p.items()}

    def unmapped_parameters(self):
        return {}

    # ---- embeddings and positions
    def table(self, side):
        if self.cfg["share_embeddings"]:
            return self.p["E"]
        return self.p["E_src" if side == "src" else "E_tgt"]

    def embed(self, ids, side):
        return self.table(side)[ids] * math.sqrt(self.d)

    def add_positions(self, x):
        return x + sinusoid_table(x.shape[1], self.d)[None]

    # ---- masks (keep polarity)
    def keep_mask(self, ids):
        """(B, L) ids -> (B, 1, 1, L): True where the key is a token, False on padding."""
        return (ids != self.pad_id)[:, None, None, :]

    @staticmethod
    def causal(T):
        return np.tril(np.ones((T, T), dtype=bool))[None, None]

    # ---- modules
    def linear(self, x, prefix, n):
        y = x @ self.p[f"{prefix}.W_{n}"]
        b = self.p.get(f"{prefix}.b_{n}")
        return y if b is None else y + b

    def attention(self, prefix, xq, xkv, keep):
        B, Lq, d = xq.shape
        h, dk = self.h, d // self.h

        def heads(x, n):
            return self.linear(x, prefix, n).reshape(B, x.shape[1], h, dk).transpose(0, 2, 1, 3)

        q, k, v = heads(xq, "Q"), heads(xkv, "K"), heads(xkv, "V")
        weights = masked_softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(dk), keep)
        self.maps[prefix] = weights.copy()
        ctx = (weights @ v).transpose(0, 2, 1, 3).reshape(B, Lq, d)
        return self.linear(ctx, prefix, "O")

    def layer_norm(self, prefix, x):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return self.p[f"{prefix}.gamma"] * (x - mu) / np.sqrt(var + self.eps) + self.p[f"{prefix}.beta"]

    def ffn(self, prefix, x):
        hidden = np.maximum(x @ self.p[f"{prefix}.W1"] + self.p[f"{prefix}.b1"], 0.0)
        return hidden @ self.p[f"{prefix}.W2"] + self.p[f"{prefix}.b2"]

    def encoder_layer(self, l, x, keep):
        p = f"encoder.{l}"
        x = self.layer_norm(f"{p}.norm1", x + self.attention(f"{p}.self_attn", x, x, keep))
        return self.layer_norm(f"{p}.norm2", x + self.ffn(f"{p}.ffn", x))

    def decoder_layer(self, l, y, memory, self_keep, cross_keep):
        p = f"decoder.{l}"
        y = self.layer_norm(f"{p}.norm1", y + self.attention(f"{p}.self_attn", y, y, self_keep))
        y = self.layer_norm(f"{p}.norm2", y + self.attention(f"{p}.cross_attn", y, memory, cross_keep))
        return self.layer_norm(f"{p}.norm3", y + self.ffn(f"{p}.ffn", y))

    def logits(self, y):
        if self.cfg["tie_output"]:
            return y @ self.table("tgt").T
        return y @ self.p["W_out"]

    # ---- stacks
    def encode_ids(self, src):
        x = self.add_positions(self.embed(src, "src"))
        keep = self.keep_mask(src)
        for l in range(self.N):
            x = self.encoder_layer(l, x, keep)
        return x

    def decode_ids(self, tgt_in, memory, src):
        self_keep = self.keep_mask(tgt_in) & self.causal(tgt_in.shape[1])
        cross_keep = self.keep_mask(src)
        y = self.add_positions(self.embed(tgt_in, "tgt"))
        for l in range(self.N):
            y = self.decoder_layer(l, y, memory, self_keep, cross_keep)
        return self.logits(y)

    # ---- the protocol
    @staticmethod
    def ids(a):
        return np.asarray(a, dtype=np.int64)

    def encode(self, src):
        return self.encode_ids(self.ids(src))

    def decode(self, tgt_in, memory, src):
        return self.decode_ids(self.ids(tgt_in), np.asarray(memory, dtype=F64), self.ids(src))

    def forward(self, src, tgt_in):
        src = self.ids(src)
        return self.decode_ids(self.ids(tgt_in), self.encode_ids(src), src)

    def attention_weights(self, src, tgt_in):
        self.maps = {}
        self.forward(src, tgt_in)
        return dict(self.maps)

    def greedy_decode(self, src, max_len):
        src = self.ids(src)
        memory = self.encode_ids(src)
        ys = np.full((src.shape[0], 1), self.bos_id, dtype=np.int64)
        finished = np.zeros(src.shape[0], dtype=bool)
        for _ in range(int(max_len)):
            nxt = self.decode_ids(ys, memory, src)[:, -1].argmax(-1)
            nxt = np.where(finished, self.pad_id, nxt)
            ys = np.concatenate([ys, nxt[:, None]], axis=1)
            finished |= nxt == self.eos_id
            if finished.all():
                break
        return ys[:, 1:]


class ModelOnly:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy (module classes)")

    def __init__(self, model_class):
        self.model_class = model_class

    def build_model(self, config, seed):
        return self.model_class(config, seed)


def model_adapter(model_class=NumpyModules) -> ModelOnly:
    return ModelOnly(model_class)
