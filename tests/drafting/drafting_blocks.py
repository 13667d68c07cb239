"""Building blocks the drafting models share, written the way tutorials write them (not the suite's reference).

Post-norm layers (LayerNorm(x + Sublayer(x))), attention with four projections, masks as keep masks built from the
padding index, sinusoids as a buffer, the embedding scaled by sqrt(d_model). ``bias`` is the attention projections'.
"""

import math

import torch
from torch import nn


def sinusoids(length: int, d_model: int) -> torch.Tensor:
    position = torch.arange(length, dtype=torch.float32)[:, None]
    rate = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * -(math.log(10000.0) / d_model))
    table = torch.zeros(length, d_model)
    table[:, 0::2], table[:, 1::2] = torch.sin(position * rate), torch.cos(position * rate)
    return table


def causal(size: int) -> torch.Tensor:
    return torch.ones(size, size, dtype=torch.bool).tril()


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, dropout=0.1, bias=True):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.q_proj, self.k_proj = nn.Linear(d_model, d_model, bias=bias), nn.Linear(d_model, d_model, bias=bias)
        self.v_proj, self.out_proj = nn.Linear(d_model, d_model, bias=bias), nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)
        self.attn = None

    def heads(self, x):
        return x.view(x.shape[0], x.shape[1], self.n_heads, self.d_k).transpose(1, 2)

    def forward(self, query, key, value, keep):
        q, k, v = self.heads(self.q_proj(query)), self.heads(self.k_proj(key)), self.heads(self.v_proj(value))
        scores = (q @ k.transpose(-2, -1) / math.sqrt(self.d_k)).masked_fill(~keep, -1e9)
        self.attn = scores.softmax(-1)
        context = (self.dropout(self.attn) @ v).transpose(1, 2).reshape(query.shape)
        return self.out_proj(context)


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.fc1, self.fc2, self.dropout = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model), nn.Dropout(dropout)

    def forward(self, x):
        return self.fc2(self.dropout(torch.relu(self.fc1(x))))


class EncoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, bias=True):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout, bias)
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.norm1, self.norm2, self.dropout = nn.LayerNorm(d_model), nn.LayerNorm(d_model), nn.Dropout(dropout)

    def forward(self, x, keep):
        x = self.norm1(x + self.dropout(self.self_attn(x, x, x, keep)))
        return self.norm2(x + self.dropout(self.feed_forward(x)))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, bias=True):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout, bias)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout, bias)
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(d_model), nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, y, memory, tgt_keep, src_keep):
        y = self.norm1(y + self.dropout(self.self_attn(y, y, y, tgt_keep)))
        y = self.norm2(y + self.dropout(self.cross_attn(y, memory, memory, src_keep)))
        return self.norm3(y + self.dropout(self.feed_forward(y)))


class Stacks(nn.Module):
    """The encoder and decoder stacks, the embeddings' scaling and positions, and the masks from ``pad_id``: what each
    model below adds is its tables and its output projection."""

    def __init__(self, d_model, n_heads, d_ff, n_layers, dropout, pad_id, bias=True, max_len=512):
        super().__init__()
        self.d_model, self.pad_id = d_model, pad_id
        self.encoder = nn.ModuleList(EncoderLayer(d_model, n_heads, d_ff, dropout, bias) for _ in range(n_layers))
        self.decoder = nn.ModuleList(DecoderLayer(d_model, n_heads, d_ff, dropout, bias) for _ in range(n_layers))
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("positions", sinusoids(max_len, d_model), persistent=False)

    def embed(self, table, ids):
        return self.dropout(table(ids) * math.sqrt(self.d_model) + self.positions[: ids.shape[1]])

    def run_encoder(self, x, src):
        keep = (src != self.pad_id)[:, None, None, :]
        for layer in self.encoder:
            x = layer(x, keep)
        return x

    def run_decoder(self, y, memory, tgt, src):
        tgt_keep = (tgt != self.pad_id)[:, None, None, :] & causal(tgt.shape[1])
        for layer in self.decoder:
            y = layer(y, memory, tgt_keep, (src != self.pad_id)[:, None, None, :])
        return y
