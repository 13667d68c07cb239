"""A correct encoder-decoder Transformer for the model-only files of this held-out set (nothing here deviates).

Style: torch tensors in float64 *without* ``nn.Module``: the parameters are a plain ``dict`` of tensors under their
canonical names (orientation ``x @ W``), the configuration a ``namedtuple``, every stage a method of one plain
class (``DictTransformer``), the masks boolean *blocked* masks (True = may not attend, PyTorch's polarity) built
inside the model from ``pad_id``, activations batch-first, heads made with ``view`` + ``transpose`` and
``torch.matmul``; a query whose keys are all blocked gets weights 0 (``nan_to_num`` after the softmax).

Each model-level bug file subclasses ``DictTransformer`` and overrides the one method it gets wrong, then builds its
adapter with ``model_adapter(cls)``.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
import torch

from conformance import Conventions

DT = torch.float64

Config = namedtuple(
    "Config",
    "src_vocab tgt_vocab d_model h d_ff N eps attention_bias share_embeddings tie_output pad_id bos_id eos_id",
)


def config_of(config: dict) -> Config:
    return Config(**{name: config[name] for name in Config._fields})


def parameter_shapes(c: Config) -> dict:
    d, shapes = c.d_model, {}
    if c.share_embeddings:
        shapes["E"] = (c.src_vocab, d)
    else:
        shapes["E_src"], shapes["E_tgt"] = (c.src_vocab, d), (c.tgt_vocab, d)
    if not c.tie_output:
        shapes["W_out"] = (d, c.tgt_vocab)

    def attention(prefix):
        shapes.update({f"{prefix}.W_{n}": (d, d) for n in "QKVO"})
        if c.attention_bias:
            shapes.update({f"{prefix}.b_{n}": (d,) for n in "QKVO"})

    def norm(prefix):
        shapes.update({f"{prefix}.gamma": (d,), f"{prefix}.beta": (d,)})

    def ffn(prefix):
        shapes.update({f"{prefix}.W1": (d, c.d_ff), f"{prefix}.b1": (c.d_ff,),
                       f"{prefix}.W2": (c.d_ff, d), f"{prefix}.b2": (d,)})

    for l in range(c.N):
        attention(f"encoder.{l}.self_attn"), norm(f"encoder.{l}.norm1"), ffn(f"encoder.{l}.ffn"), norm(f"encoder.{l}.norm2")
    for l in range(c.N):
        attention(f"decoder.{l}.self_attn"), norm(f"decoder.{l}.norm1")
        attention(f"decoder.{l}.cross_attn"), norm(f"decoder.{l}.norm2")
        ffn(f"decoder.{l}.ffn"), norm(f"decoder.{l}.norm3")
    return shapes


def sinusoids(n: int, d: int) -> torch.Tensor:
    """(n, d): sin(pos / 10000^(2i/d)) in column 2i, cos in column 2i + 1."""
    pos = torch.arange(n, dtype=DT)[:, None]
    inv = torch.exp(torch.arange(0, d, 2, dtype=DT) * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d, dtype=DT)
    pe[:, 0::2] = torch.sin(pos * inv)
    pe[:, 1::2] = torch.cos(pos * inv[: d // 2])
    return pe


class DictTransformer:
    """The protocol's Model, evaluation only (no train_step)."""

    def __init__(self, config: dict, seed: int):
        self.c = config_of(config)
        gen = torch.Generator().manual_seed(int(seed))
        self.w = {}
        for name, shape in parameter_shapes(self.c).items():
            if name.endswith(".gamma"):
                self.w[name] = torch.ones(shape, dtype=DT)
            elif len(shape) == 1:
                self.w[name] = torch.zeros(shape, dtype=DT)
            else:
                self.w[name] = torch.randn(shape, generator=gen, dtype=DT) / math.sqrt(shape[0])
        self.maps = {}

    # ---- weights
    def load_weights(self, weights):
        for name in self.w:
            self.w[name] = torch.tensor(np.asarray(weights[name]), dtype=DT)

    def dump_weights(self):
        return {name: t.numpy().copy() for name, t in self.w.items()}

    def unmapped_parameters(self):
        return {}

    # ---- building blocks
    def table(self, side):
        if self.c.share_embeddings:
            return self.w["E"]
        return self.w["E_src" if side == "src" else "E_tgt"]

    def scaled_lookup(self, ids, side):
        return self.table(side)[ids] * math.sqrt(self.c.d_model)

    def add_positions(self, x):
        return x + sinusoids(x.shape[1], self.c.d_model)[None]

    def blocked(self, ids):
        """(B, L) ids -> (B, 1, 1, L): True on the padding keys."""
        return (ids == self.c.pad_id)[:, None, None, :]

    @staticmethod
    def future(T):
        return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)[None, None]

    def linear(self, x, prefix, n):
        y = x @ self.w[f"{prefix}.W_{n}"]
        b = self.w.get(f"{prefix}.b_{n}")
        return y if b is None else y + b

    def attention(self, prefix, xq, xkv, blocked):
        B, Lq, d = xq.shape
        h = self.c.h
        dk = d // h

        def heads(x, n):
            return self.linear(x, prefix, n).view(B, x.shape[1], h, dk).transpose(1, 2)

        q, k, v = heads(xq, "Q"), heads(xkv, "K"), heads(xkv, "V")
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(dk)
        if blocked is not None:
            scores = scores.masked_fill(blocked, float("-inf"))
        weights = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
        self.maps[prefix] = weights.numpy().copy()
        ctx = torch.matmul(weights, v).transpose(1, 2).reshape(B, Lq, d)
        return self.linear(ctx, prefix, "O")

    def norm(self, prefix, x):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        return self.w[f"{prefix}.gamma"] * (x - mu) / torch.sqrt(var + self.c.eps) + self.w[f"{prefix}.beta"]

    def ffn(self, prefix, x):
        hidden = torch.relu(x @ self.w[f"{prefix}.W1"] + self.w[f"{prefix}.b1"])
        return hidden @ self.w[f"{prefix}.W2"] + self.w[f"{prefix}.b2"]

    def encoder_layer(self, l, x, blocked):
        p = f"encoder.{l}"
        x = self.norm(f"{p}.norm1", x + self.attention(f"{p}.self_attn", x, x, blocked))
        return self.norm(f"{p}.norm2", x + self.ffn(f"{p}.ffn", x))

    def decoder_layer(self, l, y, memory, self_blocked, cross_blocked):
        p = f"decoder.{l}"
        y = self.norm(f"{p}.norm1", y + self.attention(f"{p}.self_attn", y, y, self_blocked))
        y = self.norm(f"{p}.norm2", y + self.attention(f"{p}.cross_attn", y, memory, cross_blocked))
        return self.norm(f"{p}.norm3", y + self.ffn(f"{p}.ffn", y))

    def encoder_stack(self, x, blocked):
        for l in range(self.c.N):
            x = self.encoder_layer(l, x, blocked)
        return x

    def decoder_stack(self, y, memory, self_blocked, cross_blocked):
        for l in range(self.c.N):
            y = self.decoder_layer(l, y, memory, self_blocked, cross_blocked)
        return y

    def logits(self, y):
        if self.c.tie_output:
            return y @ self.table("tgt").T
        return y @ self.w["W_out"]

    # ---- the protocol (numpy at the edge)
    @staticmethod
    def ids(a):
        return torch.as_tensor(np.asarray(a, dtype=np.int64))

    def encode_tensor(self, src):
        x = self.add_positions(self.scaled_lookup(src, "src"))
        return self.encoder_stack(x, self.blocked(src))

    def decode_tensor(self, tgt_in, memory, src):
        self_blocked = self.blocked(tgt_in) | self.future(tgt_in.shape[1])
        y = self.add_positions(self.scaled_lookup(tgt_in, "tgt"))
        return self.logits(self.decoder_stack(y, memory, self_blocked, self.blocked(src)))

    def encode(self, src):
        with torch.no_grad():
            return self.encode_tensor(self.ids(src)).numpy()

    def decode(self, tgt_in, memory, src):
        with torch.no_grad():
            memory = torch.tensor(np.asarray(memory), dtype=DT)
            return self.decode_tensor(self.ids(tgt_in), memory, self.ids(src)).numpy()

    def forward(self, src, tgt_in):
        with torch.no_grad():
            src = self.ids(src)
            return self.decode_tensor(self.ids(tgt_in), self.encode_tensor(src), src).numpy()

    def attention_weights(self, src, tgt_in):
        self.maps = {}
        self.forward(src, tgt_in)
        return dict(self.maps)

    def greedy_decode(self, src, max_len):
        c = self.c
        with torch.no_grad():
            src = self.ids(src)
            memory = self.encode_tensor(src)
            ys = torch.full((src.shape[0], 1), c.bos_id, dtype=torch.int64)
            finished = torch.zeros(src.shape[0], dtype=torch.bool)
            for _ in range(int(max_len)):
                best = self.decode_tensor(ys, memory, src)[:, -1].argmax(-1)
                best = torch.where(finished, torch.full_like(best, c.pad_id), best)
                ys = torch.cat([ys, best[:, None]], dim=1)
                finished |= best == c.eos_id
                if bool(finished.all()):
                    break
        return ys[:, 1:].numpy()


class ModelOnly:
    conventions = Conventions(mask="blocked", batch_first=True, dtype="float64",
                              framework="torch (tensors in a dict, no nn.Module)")

    def __init__(self, model_class):
        self.model_class = model_class

    def build_model(self, config, seed):
        return self.model_class(config, seed)


def model_adapter(model_class=DictTransformer) -> ModelOnly:
    return ModelOnly(model_class)
