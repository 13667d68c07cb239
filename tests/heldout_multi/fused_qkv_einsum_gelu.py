"""A compact Transformer in the style of modern research code: one fused ``qkv`` projection for
self-attention, a fused ``kv`` projection for cross-attention, every contraction written with
``torch.einsum``, GELU feed-forward blocks and a config dataclass.

Model only: the adapter gives the model, the attention and feed-forward modules, the layers, the
positional table and the parameter count.
"""

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from conformance import Conventions
from conformance.adapters.torch import Component, TorchAdapter


@dataclass
class Config:
    vocab: int
    dim: int = 512
    heads: int = 8
    ffn_dim: int = 2048
    depth: int = 6
    dropout: float = 0.1
    norm_eps: float = 1e-5
    qkv_bias: bool = True
    pad: int = 0
    attn_temperature: str = "dim"   # how the logits are tempered: "dim" or "head_dim_sqrt"
    activation: str = "gelu"        # "gelu" or "relu"


def sinusoidal_table(n, dim):
    pos = torch.arange(n, dtype=torch.float64)
    freqs = torch.exp(-math.log(10000.0) * torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    ang = torch.einsum("i,j->ij", pos, freqs)
    return torch.stack([ang.sin(), ang.cos()], dim=-1).flatten(1).float()  # (n, dim): sin, cos interleaved


def attend(q, k, v, keep, temperature):
    """q (b, h, i, d), k, v (b, h, j, d), keep broadcastable to (b, h, i, j)."""
    logits = torch.einsum("bhid,bhjd->bhij", q, k) * temperature
    if keep is not None:
        logits = logits.masked_fill(~keep, float("-inf"))
    attn = torch.nan_to_num(logits.softmax(dim=-1), nan=0.0)  # a row with no key reads nothing
    return torch.einsum("bhij,bhjd->bhid", attn, v), attn


class Attention(nn.Module):
    def __init__(self, cfg: Config, cross: bool = False):
        super().__init__()
        self.heads, self.cross = cfg.heads, cross
        if cross:
            self.q = nn.Linear(cfg.dim, cfg.dim, bias=cfg.qkv_bias)
            self.kv = nn.Linear(cfg.dim, 2 * cfg.dim, bias=cfg.qkv_bias)
        else:
            self.qkv = nn.Linear(cfg.dim, 3 * cfg.dim, bias=cfg.qkv_bias)
        self.proj = nn.Linear(cfg.dim, cfg.dim, bias=cfg.qkv_bias)
        head_dim = cfg.dim // cfg.heads
        self.temperature = 1.0 / cfg.dim if cfg.attn_temperature == "dim" else head_dim ** -0.5
        self.attn = None

    def split(self, t):
        return t.unflatten(-1, (self.heads, -1)).transpose(1, 2)  # (b, n, h*d) -> (b, h, n, d)

    def forward(self, x, context=None, keep=None):
        if self.cross:
            q = self.q(x)
            k, v = self.kv(context).chunk(2, dim=-1)
        else:
            q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = map(self.split, (q, k, v))
        out, self.attn = attend(q, k, v, None if keep is None else keep[:, None], self.temperature)
        return self.proj(out.transpose(1, 2).flatten(2))


class FeedForward(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.up = nn.Linear(cfg.dim, cfg.ffn_dim)
        self.down = nn.Linear(cfg.ffn_dim, cfg.dim)
        self.act = F.gelu if cfg.activation == "gelu" else F.relu

    def forward(self, x):
        return self.down(self.act(self.up(x)))


class EncoderBlock(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.attn, self.ln_attn = Attention(cfg), nn.LayerNorm(cfg.dim, eps=cfg.norm_eps)
        self.ff, self.ln_ff = FeedForward(cfg), nn.LayerNorm(cfg.dim, eps=cfg.norm_eps)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x, keep):
        x = self.ln_attn(x + self.drop(self.attn(x, keep=keep)))
        return self.ln_ff(x + self.drop(self.ff(x)))


class DecoderBlock(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.attn, self.ln_attn = Attention(cfg), nn.LayerNorm(cfg.dim, eps=cfg.norm_eps)
        self.xattn, self.ln_xattn = Attention(cfg, cross=True), nn.LayerNorm(cfg.dim, eps=cfg.norm_eps)
        self.ff, self.ln_ff = FeedForward(cfg), nn.LayerNorm(cfg.dim, eps=cfg.norm_eps)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x, memory, self_keep, cross_keep):
        x = self.ln_attn(x + self.drop(self.attn(x, keep=self_keep)))
        x = self.ln_xattn(x + self.drop(self.xattn(x, memory, keep=cross_keep)))
        return self.ln_ff(x + self.drop(self.ff(x)))


def causal_keep(n):
    i = torch.arange(n)
    return i[:, None] >= i[None, :]


class Seq2Seq(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab, cfg.dim)
        self.encoder = nn.ModuleList([EncoderBlock(cfg) for _ in range(cfg.depth)])
        self.decoder = nn.ModuleList([DecoderBlock(cfg) for _ in range(cfg.depth)])
        self.drop = nn.Dropout(cfg.dropout)
        nn.init.normal_(self.tok.weight, std=cfg.dim ** -0.5)

    def embed(self, ids):
        x = self.tok(ids) * math.sqrt(self.cfg.dim) + sinusoidal_table(ids.shape[1], self.cfg.dim).to(self.tok.weight)
        return self.drop(x)

    def encode(self, src):
        keep = (src != self.cfg.pad)[:, None, :]
        x = self.embed(src)
        for block in self.encoder:
            x = block(x, keep)
        return x

    def decode(self, tgt, memory, src):
        self_keep = (tgt != self.cfg.pad)[:, None, :] & causal_keep(tgt.shape[1])
        cross_keep = (src != self.cfg.pad)[:, None, :]
        y = self.embed(tgt)
        for block in self.decoder:
            y = block(y, memory, self_keep, cross_keep)
        return torch.einsum("btd,vd->btv", y, self.tok.weight)  # tied output

    def forward(self, src, tgt):
        return self.decode(tgt, self.encode(src), src)


# --------------------------------------------------------------------------------------------------
# The adapter
# --------------------------------------------------------------------------------------------------

TEMPERATURE, ACTIVATION = "dim", "gelu"  # the settings this checkpoint family was trained with


def config_of(c):
    return Config(vocab=c.src_vocab, dim=c.d_model, heads=c.h, ffn_dim=c.d_ff, depth=c.N, dropout=c.dropout,
                  norm_eps=c.eps, qkv_bias=c.attention_bias, pad=c.pad_id, attn_temperature=TEMPERATURE,
                  activation=ACTIVATION)


def sizes_config(s):
    return Config(vocab=1, dim=s.d_model, heads=s.h or 1, ffn_dim=s.d_ff or 4 * s.d_model, depth=1, dropout=0.0,
                  norm_eps=s.eps or 1e-5, qkv_bias=bool(s.bias), attn_temperature=TEMPERATURE, activation=ACTIVATION)


NAMES = {
    "E": "tok.weight",
    "*.{l}.self_attn.W_QKV": "*.{l}.attn.qkv.weight",
    "*.{l}.self_attn.W_O": "*.{l}.attn.proj.weight",
    "decoder.{l}.cross_attn.W_Q": "decoder.{l}.xattn.q.weight",
    "decoder.{l}.cross_attn.W_KV": "decoder.{l}.xattn.kv.weight",
    "decoder.{l}.cross_attn.W_O": "decoder.{l}.xattn.proj.weight",
    "*.{l}.ffn.W1": "*.{l}.ff.up.weight",
    "*.{l}.ffn.W2": "*.{l}.ff.down.weight",
    "*.{l}.norm1": "*.{l}.ln_attn",
    "encoder.{l}.norm2": "encoder.{l}.ln_ff",
    "decoder.{l}.norm2": "decoder.{l}.ln_xattn",
    "decoder.{l}.norm3": "decoder.{l}.ln_ff",
}


def mha_call(module, query, key, value, keep):
    if module.cross:
        return module(query, key, keep=keep)
    return module(query, keep=keep)


adapter = TorchAdapter(
    lambda c: Seq2Seq(config_of(c)),
    names=NAMES,
    conventions=Conventions(
        mask="keep", batch_first=True, framework="torch",
        supports={"share_embeddings": (True,), "tie_output": (True,)},
        reasons={"share_embeddings": "one token table", "tie_output": "the output reads the token table"}),
    positional_encoding=lambda n, d_model: sinusoidal_table(n, d_model),
    # self-attention when query, key and value are one tensor, else the cross-attention module
    multi_head_attention=Component(
        lambda s: Attention(sizes_config(s), cross=True), mha_call,
        names={"W_Q": "q.weight", "W_KV": "kv.weight", "W_O": "proj.weight"}),
    feed_forward=Component(lambda s: FeedForward(sizes_config(s)), names={"W1": "up.weight", "W2": "down.weight"}),
    encoder_layer=Component(lambda s: EncoderBlock(sizes_config(s)),
                            lambda block, x, keep: block(x, keep[:, None, :])),
    decoder_layer=Component(
        lambda s: DecoderBlock(sizes_config(s)),
        lambda block, y, memory, tgt, src: block(y, memory, tgt[:, None, :] & causal_keep(y.shape[1]),
                                                 src[:, None, :])),
)
