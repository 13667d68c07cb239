"""(f) The Annotated Transformer's attention: the four projections in one list (``linears.0`` to ``linears.3``: q, k,
v, out), so the attention module is not the common module of its projections, and the draft must list it."""

import math

import torch.nn.functional as F
from drafting_blocks import Stacks
from torch import nn


class NestedAttention(nn.Module):
    def __init__(self, d_model, n_heads, dropout=0.1):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.linears = nn.ModuleList(nn.Linear(d_model, d_model) for _ in range(4))
        self.dropout, self.attn = nn.Dropout(dropout), None

    def heads(self, x):
        return x.view(x.shape[0], x.shape[1], self.n_heads, self.d_k).transpose(1, 2)

    def forward(self, query, key, value, keep):
        q, k, v = (self.heads(linear(x)) for linear, x in zip(self.linears[:3], (query, key, value), strict=True))
        self.attn = (q @ k.transpose(-2, -1) / math.sqrt(self.d_k)).masked_fill(~keep, -1e9).softmax(-1)
        return self.linears[-1]((self.dropout(self.attn) @ v).transpose(1, 2).reshape(query.shape))


class NestedProjectionsTransformer(Stacks):
    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, dropout=0.1, pad_id=0):
        super().__init__(d_model, n_heads, d_ff, n_layers, dropout, pad_id)
        for layer in [*self.encoder, *self.decoder]:
            layer.self_attn = NestedAttention(d_model, n_heads, dropout)
        for layer in self.decoder:
            layer.cross_attn = NestedAttention(d_model, n_heads, dropout)
        self.embedding = nn.Embedding(vocab_size, d_model)

    def encode(self, src):
        return self.run_encoder(self.embed(self.embedding, src), src)

    def decode(self, tgt, memory, src):
        return F.linear(self.run_decoder(self.embed(self.embedding, tgt), memory, tgt, src), self.embedding.weight)
