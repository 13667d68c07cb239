"""A float64 PyTorch Transformer written as separate ``Encoder``, ``Decoder`` and ``OutputLayer`` classes around
one ``Embeddings`` module that the encoder and the decoder share (a joint source-target vocabulary); the
output layer is an ``nn.Linear`` of its own that ``load_weights`` fills with a copy of the shared table.
The decoder's mask comes from a ``make_std_mask`` helper built on ``torch.tril``.

Model only: the adapter gives the model, the layers and the parameter count, computing in float64.
"""

import math

import torch
from torch import nn

from conformance import Conventions
from conformance.adapters.torch import Component, TorchAdapter

DTYPE = torch.float64
LOOKAHEAD = 1  # the diagonal passed to torch.tril in subsequent_mask
SEPARATE_GENERATOR = True


def subsequent_mask(size):
    "Mask out subsequent positions: (size, size), True where query i may read key j."
    return torch.tril(torch.ones(size, size, dtype=torch.bool), diagonal=LOOKAHEAD)


def make_std_mask(tgt, pad):
    """Create a mask to hide padding and future words."""
    tgt_mask = (tgt != pad).unsqueeze(-2)
    return tgt_mask & subsequent_mask(tgt.size(-1))


class Embeddings(nn.Module):
    def __init__(self, vocab, d_model):
        super().__init__()
        self.table = nn.Embedding(vocab, d_model)
        self.d_model = d_model

    def forward(self, ids):
        n = ids.size(1)
        pos = torch.arange(n, dtype=torch.float64)[:, None]
        i2 = torch.arange(0, self.d_model, 2, dtype=torch.float64)
        angles = pos / torch.pow(10000.0, i2 / self.d_model)
        pe = torch.zeros(n, self.d_model, dtype=torch.float64)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(angles), torch.cos(angles)
        return self.table(ids) * math.sqrt(self.d_model) + pe.to(self.table.weight.dtype)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, h, bias):
        super().__init__()
        self.h, self.d_k = h, d_model // h
        self.query = nn.Linear(d_model, d_model, bias=bias)
        self.key = nn.Linear(d_model, d_model, bias=bias)
        self.value = nn.Linear(d_model, d_model, bias=bias)
        self.out = nn.Linear(d_model, d_model, bias=bias)
        self.last_weights = None

    def heads(self, x):
        return x.view(x.size(0), x.size(1), self.h, self.d_k).permute(0, 2, 1, 3)

    def forward(self, q, k, v, keep):
        q, k, v = self.heads(self.query(q)), self.heads(self.key(k)), self.heads(self.value(v))
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.d_k)
        scores = scores.masked_fill(~keep.unsqueeze(1), float("-inf"))
        weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
        self.last_weights = weights
        ctx = torch.einsum("bhqk,bhkd->bhqd", weights, v).permute(0, 2, 1, 3).flatten(2)
        return self.out(ctx)


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Residual(nn.Module):
    """Post-norm residual block: norm(x + dropout(f(x)))."""

    def __init__(self, d_model, dropout, eps):
        super().__init__()
        self.norm = nn.LayerNorm(d_model, eps=eps)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, f):
        return self.norm(x + self.drop(f(x)))


class EncoderLayer(nn.Module):
    def __init__(self, d_model, h, d_ff, dropout, eps, bias):
        super().__init__()
        self.attention, self.feed_forward = MultiHeadAttention(d_model, h, bias), FeedForward(d_model, d_ff)
        self.res1, self.res2 = Residual(d_model, dropout, eps), Residual(d_model, dropout, eps)

    def forward(self, x, src_keep):
        x = self.res1(x, lambda x: self.attention(x, x, x, src_keep))
        return self.res2(x, self.feed_forward)


class DecoderLayer(nn.Module):
    def __init__(self, d_model, h, d_ff, dropout, eps, bias):
        super().__init__()
        self.self_attention = MultiHeadAttention(d_model, h, bias)
        self.memory_attention = MultiHeadAttention(d_model, h, bias)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.res1, self.res2, self.res3 = (Residual(d_model, dropout, eps) for _ in range(3))

    def forward(self, y, memory, tgt_keep, src_keep):
        y = self.res1(y, lambda y: self.self_attention(y, y, y, tgt_keep))
        y = self.res2(y, lambda y: self.memory_attention(y, memory, memory, src_keep))
        return self.res3(y, self.feed_forward)


class Encoder(nn.Module):
    def __init__(self, embeddings, layers, dropout):
        super().__init__()
        self.embeddings, self.layers, self.drop = embeddings, nn.ModuleList(layers), nn.Dropout(dropout)

    def forward(self, src, pad):
        keep = (src != pad).unsqueeze(-2)
        x = self.drop(self.embeddings(src))
        for layer in self.layers:
            x = layer(x, keep)
        return x


class Decoder(nn.Module):
    def __init__(self, embeddings, layers, dropout):
        super().__init__()
        self.embeddings, self.layers, self.drop = embeddings, nn.ModuleList(layers), nn.Dropout(dropout)

    def forward(self, tgt, memory, src, pad):
        tgt_keep, src_keep = make_std_mask(tgt, pad), (src != pad).unsqueeze(-2)
        y = self.drop(self.embeddings(tgt))
        for layer in self.layers:
            y = layer(y, memory, tgt_keep, src_keep)
        return y


class OutputLayer(nn.Linear):
    def __init__(self, d_model, vocab):
        super().__init__(d_model, vocab, bias=False)


class Transformer(nn.Module):
    def __init__(self, vocab, d_model=512, h=8, d_ff=2048, N=6, dropout=0.1, eps=1e-5, bias=True, pad=0):
        super().__init__()
        self.pad = pad
        embeddings = Embeddings(vocab, d_model)
        self.encoder = Encoder(embeddings, [EncoderLayer(d_model, h, d_ff, dropout, eps, bias) for _ in range(N)],
                               dropout)
        self.decoder = Decoder(embeddings, [DecoderLayer(d_model, h, d_ff, dropout, eps, bias) for _ in range(N)],
                               dropout)
        self.generator = OutputLayer(d_model, vocab)
        if not SEPARATE_GENERATOR:
            self.generator.weight = embeddings.table.weight

    def encode(self, src):
        return self.encoder(src, self.pad)

    def decode(self, tgt, memory, src):
        return self.generator(self.decoder(tgt, memory, src, self.pad))

    def forward(self, src, tgt):
        return self.decode(tgt, self.encode(src), src)


NAMES = {
    "E": ["encoder.embeddings.table.weight", "generator.weight"],
    "encoder.{l}.self_attn.W_Q": "encoder.layers.{l}.attention.query.weight",
    "encoder.{l}.self_attn.W_K": "encoder.layers.{l}.attention.key.weight",
    "encoder.{l}.self_attn.W_V": "encoder.layers.{l}.attention.value.weight",
    "encoder.{l}.self_attn.W_O": "encoder.layers.{l}.attention.out.weight",
    "decoder.{l}.self_attn.W_Q": "decoder.layers.{l}.self_attention.query.weight",
    "decoder.{l}.self_attn.W_K": "decoder.layers.{l}.self_attention.key.weight",
    "decoder.{l}.self_attn.W_V": "decoder.layers.{l}.self_attention.value.weight",
    "decoder.{l}.self_attn.W_O": "decoder.layers.{l}.self_attention.out.weight",
    "decoder.{l}.cross_attn.W_Q": "decoder.layers.{l}.memory_attention.query.weight",
    "decoder.{l}.cross_attn.W_K": "decoder.layers.{l}.memory_attention.key.weight",
    "decoder.{l}.cross_attn.W_V": "decoder.layers.{l}.memory_attention.value.weight",
    "decoder.{l}.cross_attn.W_O": "decoder.layers.{l}.memory_attention.out.weight",
    "*.{l}.ffn.W1": "*.layers.{l}.feed_forward.fc1.weight",
    "*.{l}.ffn.W2": "*.layers.{l}.feed_forward.fc2.weight",
    "*.{l}.norm1": "*.layers.{l}.res1.norm",
    "*.{l}.norm2": "*.layers.{l}.res2.norm",
    "decoder.{l}.norm3": "decoder.layers.{l}.res3.norm",
}

def build(c):
    return Transformer(c.src_vocab, c.d_model, c.h, c.d_ff, c.N, c.dropout, c.eps, c.attention_bias, c.pad_id).to(DTYPE)


adapter = TorchAdapter(
    build,
    names=NAMES,
    conventions=Conventions(
        mask="keep", batch_first=True, dtype="float64", framework="torch (float64)", ties_embeddings=False,
        supports={"share_embeddings": (True,), "tie_output": (True,)},
        reasons={"share_embeddings": "one joint vocabulary and one Embeddings module",
                 "tie_output": "the output layer starts as a copy of the joint table"}),
    encoder_layer=Component(lambda s: EncoderLayer(s.d_model, s.h, s.d_ff, 0.0, s.eps, s.bias),
                            lambda layer, x, keep: layer(x, keep.unsqueeze(-2))),
    decoder_layer=Component(
        lambda s: DecoderLayer(s.d_model, s.h, s.d_ff, 0.0, s.eps, s.bias),
        lambda layer, y, memory, tgt, src: layer(y, memory, tgt.unsqueeze(-2) & subsequent_mask(y.size(1)),
                                                 src.unsqueeze(-2))),
)
