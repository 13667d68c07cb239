"""A small Transformer written the way much research code is, for the walk-through (docs/walkthrough.md).

Deliberately unlike the reference: each attention and feed-forward module adds its own residual and applies
its own LayerNorm (``x = self.attention(x, mask)`` returns the normalised sum), self-attention has one fused
``qkv`` projection and cross-attention a fused ``kv`` one, masks are (B, 1, Lq, Lk) keep masks built from
the padding index inside the model, the LayerNorm epsilon is fixed at 1e-6, and the positional encoding is
computed in float32 with exp/log as the annotated transformer does. It knows nothing of this suite.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn


def positional_encoding(length: int, d_model: int) -> torch.Tensor:
    position = torch.arange(length, dtype=torch.float32).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * -(math.log(10000.0) / d_model))
    pe = torch.zeros(length, d_model)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


def rate(step: int, d_model: int, warmup: int) -> float:
    """The "Noam" schedule, step counted from 1."""
    return d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def subsequent_mask(size: int) -> torch.Tensor:
    return torch.tril(torch.ones(size, size, dtype=torch.bool))


def attention(q, k, v, mask):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, -1e9)
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


class MultiHeadBlock(nn.Module):
    """Attention with its residual and its norm: LayerNorm(x + Attention(x, kv))."""

    def __init__(self, d_model, n_heads, dropout, cross=False):
        super().__init__()
        self.n_heads, self.cross = n_heads, cross
        if cross:
            self.q, self.kv = nn.Linear(d_model, d_model), nn.Linear(d_model, 2 * d_model)
        else:
            self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.norm = nn.LayerNorm(d_model, eps=1e-6)
        self.dropout = nn.Dropout(dropout)
        self.attn = None

    def split(self, x):
        B, L, d = x.shape
        return x.view(B, L, self.n_heads, d // self.n_heads).transpose(1, 2)

    def forward(self, x, mask, memory=None):
        if self.cross:
            q, (k, v) = self.q(x), self.kv(memory).chunk(2, dim=-1)
        else:
            q, k, v = self.qkv(x).chunk(3, dim=-1)
        context, self.attn = attention(self.split(q), self.split(k), self.split(v), mask)
        context = context.transpose(1, 2).reshape(x.shape)
        return self.norm(x + self.dropout(self.out(context)))


class FeedForwardBlock(nn.Module):
    def __init__(self, d_model, d_ff, dropout):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.norm = nn.LayerNorm(d_model, eps=1e-6)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.norm(x + self.dropout(self.fc2(F.relu(self.fc1(x)))))


class EncoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout):
        super().__init__()
        self.attention = MultiHeadBlock(d_model, n_heads, dropout)
        self.feed_forward = FeedForwardBlock(d_model, d_ff, dropout)

    def forward(self, x, src_mask):
        return self.feed_forward(self.attention(x, src_mask))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout):
        super().__init__()
        self.self_attention = MultiHeadBlock(d_model, n_heads, dropout)
        self.cross_attention = MultiHeadBlock(d_model, n_heads, dropout, cross=True)
        self.feed_forward = FeedForwardBlock(d_model, d_ff, dropout)

    def forward(self, y, memory, src_mask, tgt_mask):
        y = self.self_attention(y, tgt_mask)
        return self.feed_forward(self.cross_attention(y, src_mask, memory))


class Transformer(nn.Module):
    def __init__(self, vocab_size, d_model=512, n_heads=8, d_ff=2048, n_layers=6, dropout=0.1, pad_idx=0):
        super().__init__()
        self.d_model, self.pad_idx = d_model, pad_idx
        self.embedding = nn.Embedding(vocab_size, d_model)  # shared by source, target and output
        self.encoder = nn.ModuleList(EncoderLayer(d_model, n_heads, d_ff, dropout) for _ in range(n_layers))
        self.decoder = nn.ModuleList(DecoderLayer(d_model, n_heads, d_ff, dropout) for _ in range(n_layers))
        self.dropout = nn.Dropout(dropout)

    def embed(self, ids):
        x = self.embedding(ids) * math.sqrt(self.d_model)
        return self.dropout(x + positional_encoding(ids.size(1), self.d_model))

    def encode(self, src):
        src_mask = (src != self.pad_idx)[:, None, None, :]
        x = self.embed(src)
        for layer in self.encoder:
            x = layer(x, src_mask)
        return x

    def decode(self, tgt, memory, src):
        src_mask = (src != self.pad_idx)[:, None, None, :]
        tgt_mask = (tgt != self.pad_idx)[:, None, None, :] & subsequent_mask(tgt.size(1))
        y = self.embed(tgt)
        for layer in self.decoder:
            y = layer(y, memory, src_mask, tgt_mask)
        return F.linear(y, self.embedding.weight)

    def forward(self, src, tgt):
        return self.decode(tgt, self.encode(src), src)
