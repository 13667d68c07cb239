"""A correct encoder-decoder Transformer for the model-only files of this held-out set (nothing here is buggy).

Style: a torch.nn.Module tree built from ``nn.ModuleDict`` / ``nn.ModuleList`` and ``nn.Linear`` layers (weights in
PyTorch's orientation, ``x @ W.T``, so the canonical ``x @ W`` matrices are transposed on the way in and out), the
layers computing *sequence-first* internally (``(L, B, d)``, as ``torch.nn`` does), masks as boolean *blocked*
masks (True = may not attend) built inside the model from ``pad_id``, float64 throughout. The canonical names are
reached through one generator, ``Seq2Seq.canonical()``, that yields ``(name, parameter, transposed)``.

Each model-level bug file subclasses ``Seq2Seq`` (or ``Model``) and overrides the one method it gets wrong, then
builds its adapter with ``model_adapter(cls)``.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from conformance import Conventions

DTYPE = torch.float64


class Attention(nn.Module):
    """Multi-head attention, sequence-first: q_in (Lq, B, d), kv_in (Lk, B, d), blocked (B, Lq, Lk) or None."""

    def __init__(self, d_model: int, h: int, bias: bool):
        super().__init__()
        self.h, self.d_k = h, d_model // h
        self.proj = nn.ModuleDict({k: nn.Linear(d_model, d_model, bias=bias) for k in ("q", "k", "v", "o")})
        self.last = None

    def forward(self, q_in, kv_in, blocked):
        Lq, B, d = q_in.shape
        Lk = kv_in.shape[0]

        def heads(t, L):  # (L, B, d) -> (B, h, L, d_k)
            return t.reshape(L, B, self.h, self.d_k).permute(1, 2, 0, 3)

        q = heads(self.proj["q"](q_in), Lq)
        k = heads(self.proj["k"](kv_in), Lk)
        v = heads(self.proj["v"](kv_in), Lk)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d_k)  # (B, h, Lq, Lk)
        if blocked is not None:
            b = blocked[:, None]
            scores = scores.masked_fill(b, float("-inf"))
            empty = b.all(-1, keepdim=True)
            scores = scores.masked_fill(empty, 0.0)
            p = torch.softmax(scores, -1).masked_fill(empty, 0.0)
        else:
            p = torch.softmax(scores, -1)
        self.last = p
        ctx = torch.matmul(p, v).permute(2, 0, 1, 3).reshape(Lq, B, d)  # back to (Lq, B, h * d_k)
        return self.proj["o"](ctx)


def feed_forward(d_model: int, d_ff: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))


class Block(nn.Module):
    """One encoder layer (cross=False) or decoder layer (cross=True), post-norm."""

    def __init__(self, cfg: dict, cross: bool):
        super().__init__()
        d, h, bias = cfg["d_model"], cfg["h"], cfg["attention_bias"]
        subs = {"self_attn": Attention(d, h, bias)}
        if cross:
            subs["cross_attn"] = Attention(d, h, bias)
        subs["ffn"] = feed_forward(d, cfg["d_ff"])
        self.subs = nn.ModuleDict(subs)
        self.norms = nn.ModuleList([nn.LayerNorm(d, eps=cfg["eps"]) for _ in subs])

    def forward(self, x, self_blocked, memory=None, cross_blocked=None):
        x = self.norms[0](x + self.subs["self_attn"](x, x, self_blocked))
        i = 1
        if "cross_attn" in self.subs:
            x = self.norms[1](x + self.subs["cross_attn"](x, memory, cross_blocked))
            i = 2
        return self.norms[i](x + self.subs["ffn"](x))


def sinusoids(n: int, d: int) -> torch.Tensor:
    pos = torch.arange(n, dtype=DTYPE)[:, None]
    rate = torch.exp(-math.log(10000.0) * torch.arange(0, d, 2, dtype=DTYPE) / d)
    table = torch.empty(n, d, dtype=DTYPE)
    table[:, 0::2] = torch.sin(pos * rate)
    table[:, 1::2] = torch.cos(pos * rate)
    return table


class Seq2Seq(nn.Module):
    def __init__(self, cfg: dict):
        super().__init__()
        self.cfg = cfg
        d = cfg["d_model"]
        src = nn.Embedding(cfg["src_vocab"], d)
        tgt = src if cfg["share_embeddings"] else nn.Embedding(cfg["tgt_vocab"], d)
        self.embed = nn.ModuleDict({"src": src, "tgt": tgt})
        self.stacks = nn.ModuleDict({
            "encoder": nn.ModuleList([Block(cfg, cross=False) for _ in range(cfg["N"])]),
            "decoder": nn.ModuleList([Block(cfg, cross=True) for _ in range(cfg["N"])]),
        })
        self.generator = nn.Linear(d, cfg["tgt_vocab"], bias=False)
        if cfg["tie_output"]:
            self.generator.weight = tgt.weight

    # ---- canonical names -------------------------------------------------------------------------
    def canonical(self):
        cfg = self.cfg
        if cfg["share_embeddings"]:
            yield "E", self.embed["src"].weight, False
        else:
            yield "E_src", self.embed["src"].weight, False
            yield "E_tgt", self.embed["tgt"].weight, False
        if not cfg["tie_output"]:
            yield "W_out", self.generator.weight, True
        letters = {"q": "Q", "k": "K", "v": "V", "o": "O"}
        for stack, layers in self.stacks.items():
            for n, block in enumerate(layers):
                names = list(block.subs)
                for j, sub in enumerate(names):
                    prefix = f"{stack}.{n}.{sub}"
                    module = block.subs[sub]
                    if sub == "ffn":
                        yield f"{prefix}.W1", module[0].weight, True
                        yield f"{prefix}.b1", module[0].bias, False
                        yield f"{prefix}.W2", module[2].weight, True
                        yield f"{prefix}.b2", module[2].bias, False
                    else:
                        for key, lin in module.proj.items():
                            yield f"{prefix}.W_{letters[key]}", lin.weight, True
                            if lin.bias is not None:
                                yield f"{prefix}.b_{letters[key]}", lin.bias, False
                    norm = block.norms[j]
                    yield f"{stack}.{n}.norm{j + 1}.gamma", norm.weight, False
                    yield f"{stack}.{n}.norm{j + 1}.beta", norm.bias, False

    # ---- masks (blocked polarity) -------------------------------------------------------------------
    def pad_blocked(self, ids, Lq):
        """ids (B, L) -> (B, Lq, L): True where the key is padding."""
        return (ids == self.cfg["pad_id"])[:, None, :].expand(-1, Lq, -1)

    def future_blocked(self, T):
        return torch.ones(T, T, dtype=torch.bool).triu(1)

    # ---- the computation -----------------------------------------------------------------------------
    def embed_ids(self, ids, side):
        """ids (B, L) -> (L, B, d): sqrt(d_model) E[ids] + PE."""
        d = self.cfg["d_model"]
        x = self.embed[side](ids) * math.sqrt(d) + sinusoids(ids.shape[1], d)[None]
        return x.transpose(0, 1)

    def encode(self, src):
        x = self.embed_ids(src, "src")
        blocked = self.pad_blocked(src, src.shape[1])
        for block in self.stacks["encoder"]:
            x = block(x, blocked)
        return x  # (S, B, d)

    def decode(self, tgt_in, memory, src):
        T = tgt_in.shape[1]
        y = self.embed_ids(tgt_in, "tgt")
        self_blocked = self.pad_blocked(tgt_in, T) | self.future_blocked(T)[None]
        cross_blocked = self.pad_blocked(src, T)
        for block in self.stacks["decoder"]:
            y = block(y, self_blocked, memory, cross_blocked)
        return self.generator(y).transpose(0, 1)  # (B, T, V)

    def greedy(self, src, max_len):
        cfg = self.cfg
        memory = self.encode(src)
        B = src.shape[0]
        out = torch.full((B, 1), cfg["bos_id"], dtype=torch.long)
        done = torch.zeros(B, dtype=torch.bool)
        for _ in range(max_len):
            nxt = self.decode(out, memory, src)[:, -1].argmax(-1)
            nxt = nxt.masked_fill(done, cfg["pad_id"])
            out = torch.cat([out, nxt[:, None]], 1)
            done = done | (nxt == cfg["eos_id"])
            if done.all():
                break
        return out[:, 1:]


def _ids(a):
    return torch.as_tensor(np.asarray(a), dtype=torch.long)


class Model:
    """The protocol's Model around a ``Seq2Seq`` (evaluation mode; no train_step: training is not implemented)."""

    net_class = Seq2Seq

    def __init__(self, config: dict, seed: int):
        torch.manual_seed(int(seed))
        self.net = self.net_class(dict(config)).to(DTYPE).eval()

    def load_weights(self, weights):
        with torch.no_grad():
            for name, p, transposed in self.net.canonical():
                w = torch.as_tensor(np.asarray(weights[name]), dtype=DTYPE)
                p.copy_(w.T if transposed else w)

    def dump_weights(self):
        return {name: (p.T if t else p).detach().numpy().copy() for name, p, t in self.net.canonical()}

    @torch.no_grad()
    def forward(self, src, tgt_in):
        src = _ids(src)
        return self.net.decode(_ids(tgt_in), self.net.encode(src), src).numpy()

    @torch.no_grad()
    def encode(self, src):
        return self.net.encode(_ids(src)).transpose(0, 1).numpy()

    @torch.no_grad()
    def decode(self, tgt_in, memory, src):
        mem = torch.as_tensor(np.asarray(memory), dtype=DTYPE).transpose(0, 1)
        return self.net.decode(_ids(tgt_in), mem, _ids(src)).numpy()

    @torch.no_grad()
    def greedy_decode(self, src, max_len):
        return self.net.greedy(_ids(src), int(max_len)).numpy().astype(np.int64)

    @torch.no_grad()
    def attention_weights(self, src, tgt_in):
        self.forward(src, tgt_in)
        maps = {}
        for stack, layers in self.net.stacks.items():
            for n, block in enumerate(layers):
                for sub, module in block.subs.items():
                    if isinstance(module, Attention):
                        maps[f"{stack}.{n}.{sub}"] = module.last.numpy()
        return maps

    def unmapped_parameters(self):
        named = {id(p) for _, p, _ in self.net.canonical()}
        return {n: p.numel() for n, p in self.net.named_parameters() if id(p) not in named}


class ModelAdapter:
    conventions = Conventions(mask="blocked", batch_first=True, dtype="float64", framework="torch (nn.ModuleDict)")

    def __init__(self, model_class):
        self.model_class = model_class

    def build_model(self, config, seed):
        return self.model_class(config, seed)


def model_adapter(model_class=Model) -> ModelAdapter:
    return ModelAdapter(model_class)
