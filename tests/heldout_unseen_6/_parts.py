"""A correct encoder-decoder Transformer for the model-only files of this held-out set (nothing here deviates).

Style: torch ``nn.Module`` classes in float32, *sequence-first* as ``torch.nn`` defaults (activations (L, B, d),
token ids (L, B)), ``nn.Linear`` / ``nn.Embedding`` / ``nn.LayerNorm`` modules (so the canonical matrices, in the
``x @ W`` orientation, are loaded transposed through a name map), heads flattened into the batch as PyTorch's own
``multi_head_attention_forward`` does (``view(L, B * h, d_k).transpose(0, 1)`` and ``torch.bmm``), the masks
*additive* float masks (0 where allowed, -inf where hidden) built inside the model from ``pad_id``; a query whose
keys are all hidden gets weights 0 (``nan_to_num`` after the softmax). The three tables are tied by sharing one
``Parameter`` (``tgt_embed.weight = src_embed.weight``), and ``load_weights`` copies into the parameters in place.

Each model-level bug file subclasses ``SeqFirstTransformer`` (or one of its modules) and overrides the one method
it gets wrong, then builds its adapter with ``model_adapter(cls)``.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from conformance import Conventions

DT = torch.float32


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


_PROJ = {"W_Q": "q_proj.weight", "W_K": "k_proj.weight", "W_V": "v_proj.weight", "W_O": "out_proj.weight",
         "b_Q": "q_proj.bias", "b_K": "k_proj.bias", "b_V": "v_proj.bias", "b_O": "out_proj.bias",
         "gamma": "weight", "beta": "bias", "W1": "w1.weight", "b1": "w1.bias", "W2": "w2.weight", "b2": "w2.bias"}


def module_path(name: str) -> tuple[str, bool]:
    """Canonical name -> (parameter path in the module, transposed?)."""
    if name in ("E", "E_src"):
        return "src_embed.weight", False
    if name == "E_tgt":
        return "tgt_embed.weight", False
    if name == "W_out":
        return "generator.weight", True
    head, _, leaf = name.rpartition(".")
    return f"{head}.{_PROJ[leaf]}", leaf.startswith("W")


def sinusoids(n: int, d: int) -> torch.Tensor:
    """(n, 1, d): sin(pos / 10000^(2i/d)) in column 2i, cos(pos / 10000^(2i/d)) in column 2i + 1."""
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe.to(DT).unsqueeze(1)


def padding_mask(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """(L, B) ids -> (B, 1, L) additive mask: 0 on tokens, -inf on padding keys."""
    return torch.zeros(ids.shape[1], 1, ids.shape[0], dtype=DT).masked_fill((ids == pad_id).t()[:, None, :], float("-inf"))


def causal_mask(T: int) -> torch.Tensor:
    """(T, T) additive: -inf above the diagonal (the future), 0 elsewhere."""
    return torch.triu(torch.full((T, T), float("-inf"), dtype=DT), diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d: int, h: int, bias: bool):
        super().__init__()
        self.h, self.d_k = h, d // h
        self.q_proj, self.k_proj = nn.Linear(d, d, bias=bias), nn.Linear(d, d, bias=bias)
        self.v_proj, self.out_proj = nn.Linear(d, d, bias=bias), nn.Linear(d, d, bias=bias)
        self.last_weights = None

    def forward(self, query, key, value, mask=None):
        """query (Lq, B, d), key/value (Lk, B, d), mask additive, broadcastable to (B, Lq, Lk)."""
        Lq, B, d = query.shape
        Lk, h, dk = key.shape[0], self.h, self.d_k
        q = self.q_proj(query).contiguous().view(Lq, B * h, dk).transpose(0, 1)
        k = self.k_proj(key).contiguous().view(Lk, B * h, dk).transpose(0, 1)
        v = self.v_proj(value).contiguous().view(Lk, B * h, dk).transpose(0, 1)
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(dk)
        if mask is not None:
            scores = scores + mask.expand(B, Lq, Lk).repeat_interleave(h, dim=0)
        attn = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
        self.last_weights = attn.view(B, h, Lq, Lk)
        ctx = torch.bmm(attn, v).transpose(0, 1).contiguous().view(Lq, B, d)
        return self.out_proj(ctx)


class FeedForward(nn.Module):
    def __init__(self, d: int, d_ff: int):
        super().__init__()
        self.w1, self.w2 = nn.Linear(d, d_ff), nn.Linear(d_ff, d)

    def forward(self, x):
        return self.w2(torch.relu(self.w1(x)))


class EncoderLayer(nn.Module):
    def __init__(self, d, h, d_ff, eps, bias):
        super().__init__()
        self.self_attn = MultiHeadAttention(d, h, bias)
        self.norm1 = nn.LayerNorm(d, eps=eps)
        self.ffn = FeedForward(d, d_ff)
        self.norm2 = nn.LayerNorm(d, eps=eps)

    def forward(self, x, mask):
        x = self.norm1(x + self.self_attn(x, x, x, mask))
        return self.norm2(x + self.ffn(x))


class DecoderLayer(nn.Module):
    def __init__(self, d, h, d_ff, eps, bias):
        super().__init__()
        self.self_attn = MultiHeadAttention(d, h, bias)
        self.norm1 = nn.LayerNorm(d, eps=eps)
        self.cross_attn = MultiHeadAttention(d, h, bias)
        self.norm2 = nn.LayerNorm(d, eps=eps)
        self.ffn = FeedForward(d, d_ff)
        self.norm3 = nn.LayerNorm(d, eps=eps)

    def forward(self, y, memory, self_mask, cross_mask):
        y = self.norm1(y + self.self_attn(y, y, y, self_mask))
        y = self.norm2(y + self.cross_attn(y, memory, memory, cross_mask))
        return self.norm3(y + self.ffn(y))


class SeqFirstTransformer(nn.Module):
    """The protocol's Model, evaluation only (no train_step); sequence-first at its boundary."""

    def __init__(self, config: dict, seed: int = 0):
        super().__init__()
        self.cfg = dict(config)
        c = self.cfg
        d, h, d_ff, N, eps, bias = c["d_model"], c["h"], c["d_ff"], c["N"], c["eps"], c["attention_bias"]
        self.d_model, self.h, self.N = d, h, N
        self.pad_id, self.bos_id, self.eos_id = c["pad_id"], c["bos_id"], c["eos_id"]
        with torch.random.fork_rng():
            torch.manual_seed(int(seed))
            self.src_embed = nn.Embedding(c["src_vocab"], d)
            self.tgt_embed = nn.Embedding(c["tgt_vocab"], d)
            self.encoder = nn.ModuleList([EncoderLayer(d, h, d_ff, eps, bias) for _ in range(N)])
            self.decoder = nn.ModuleList([DecoderLayer(d, h, d_ff, eps, bias) for _ in range(N)])
            self.generator = nn.Linear(d, c["tgt_vocab"], bias=False)
        if c["share_embeddings"]:
            self.tgt_embed.weight = self.src_embed.weight
        if c["tie_output"]:
            self.generator.weight = self.tgt_embed.weight
        self.eval()

    # ---- weights
    def load_weights(self, weights):
        with torch.no_grad():
            for name in parameter_shapes(self.cfg):
                path, transposed = module_path(name)
                value = torch.as_tensor(np.asarray(weights[name], dtype=np.float32))
                self.get_parameter(path).copy_(value.t() if transposed else value)

    def dump_weights(self):
        out = {}
        for name in parameter_shapes(self.cfg):
            path, transposed = module_path(name)
            p = self.get_parameter(path).detach()
            out[name] = (p.t() if transposed else p).numpy().copy()
        return out

    def unmapped_parameters(self):
        return {}

    # ---- embeddings and positions
    def embed(self, ids, table: nn.Embedding):
        x = table(ids) * math.sqrt(self.d_model)
        return x + sinusoids(ids.shape[0], self.d_model)

    # ---- stacks
    def encode_tensor(self, src):
        x = self.embed(src, self.src_embed)
        mask = padding_mask(src, self.pad_id)
        for layer in self.encoder:
            x = layer(x, mask)
        return x

    def decode_tensor(self, tgt_in, memory, src):
        self_mask = padding_mask(tgt_in, self.pad_id) + causal_mask(tgt_in.shape[0])
        cross_mask = padding_mask(src, self.pad_id)
        y = self.embed(tgt_in, self.tgt_embed)
        for layer in self.decoder:
            y = layer(y, memory, self_mask, cross_mask)
        return self.generator(y)

    # ---- the protocol (numpy in, numpy out)
    @staticmethod
    def ids(a):
        return torch.as_tensor(np.asarray(a, dtype=np.int64))

    def encode(self, src):
        with torch.no_grad():
            return self.encode_tensor(self.ids(src)).numpy()

    def decode(self, tgt_in, memory, src):
        with torch.no_grad():
            memory = torch.as_tensor(np.asarray(memory, dtype=np.float32))
            return self.decode_tensor(self.ids(tgt_in), memory, self.ids(src)).numpy()

    def forward(self, src, tgt_in):
        with torch.no_grad():
            src = self.ids(src)
            return self.decode_tensor(self.ids(tgt_in), self.encode_tensor(src), src).numpy()

    def attention_weights(self, src, tgt_in):
        self.forward(src, tgt_in)
        maps = {}
        for l in range(self.N):
            maps[f"encoder.{l}.self_attn"] = self.encoder[l].self_attn.last_weights.numpy()
            maps[f"decoder.{l}.self_attn"] = self.decoder[l].self_attn.last_weights.numpy()
            maps[f"decoder.{l}.cross_attn"] = self.decoder[l].cross_attn.last_weights.numpy()
        return maps

    def greedy_decode(self, src, max_len):
        with torch.no_grad():
            src = self.ids(src)
            memory = self.encode_tensor(src)
            ys = torch.full((1, src.shape[1]), self.bos_id, dtype=torch.int64)
            finished = torch.zeros(src.shape[1], dtype=torch.bool)
            for _ in range(int(max_len)):
                nxt = self.decode_tensor(ys, memory, src)[-1].argmax(-1)
                nxt = torch.where(finished, torch.full_like(nxt, self.pad_id), nxt)
                ys = torch.cat([ys, nxt[None]], dim=0)
                finished |= nxt == self.eos_id
                if bool(finished.all()):
                    break
            return ys[1:].numpy()


class ModelOnly:
    conventions = Conventions(mask="additive", batch_first=False, dtype="float32",
                              framework="torch (nn.Module, sequence-first)")

    def __init__(self, model_class):
        self.model_class = model_class

    def build_model(self, config, seed):
        return self.model_class(config, seed)


def model_adapter(model_class=SeqFirstTransformer) -> ModelOnly:
    return ModelOnly(model_class)


def load_component(module: nn.Module, weights: dict) -> nn.Module:
    """Copy a component's canonical weights (``self_attn.W_Q``, ``norm1.gamma``, ``ffn.W1``, ...) into ``module``."""
    with torch.no_grad():
        for name, value in weights.items():
            path, transposed = module_path(name)
            t = torch.as_tensor(np.asarray(value, dtype=np.float32))
            module.get_parameter(path).copy_(t.t() if transposed else t)
    return module.eval()
