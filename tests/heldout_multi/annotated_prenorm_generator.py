"""An encoder-decoder written the way The Annotated Transformer (Harvard NLP, 2022 edition) writes it:
``clones()``, ``EncoderDecoder``, ``SublayerConnection``, a ``Generator`` and a ``make_model`` factory.

Model only: the adapter gives the model, its layers and components and its parameter count (no training step,
no decoding loop).
"""

import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from conformance import Conventions
from conformance.adapters.torch import Component, TorchAdapter

# Options of this code base (as its make_model reads them).
OPTIONS = {"norm_first": True, "stack_norm": True, "generator_log_softmax": True}


def clones(module, N):
    "Produce N identical layers."
    return nn.ModuleList([copy.deepcopy(module) for _ in range(N)])


class EncoderDecoder(nn.Module):
    """A standard Encoder-Decoder architecture."""

    def __init__(self, encoder, decoder, src_embed, tgt_embed, generator):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.src_embed = src_embed
        self.tgt_embed = tgt_embed
        self.generator = generator

    def forward(self, src, tgt, src_mask, tgt_mask):
        "Take in and process masked src and target sequences."
        return self.decode(self.encode(src, src_mask), src_mask, tgt, tgt_mask)

    def encode(self, src, src_mask):
        return self.encoder(self.src_embed(src), src_mask)

    def decode(self, memory, src_mask, tgt, tgt_mask):
        return self.decoder(self.tgt_embed(tgt), memory, src_mask, tgt_mask)


class Generator(nn.Module):
    "Define standard linear + softmax generation step."

    def __init__(self, d_model, vocab):
        super().__init__()
        self.proj = nn.Linear(d_model, vocab, bias=False)

    def forward(self, x):
        if OPTIONS["generator_log_softmax"]:
            return F.log_softmax(self.proj(x), dim=-1)
        return self.proj(x)


class Encoder(nn.Module):
    "Core encoder is a stack of N layers"

    def __init__(self, layer, N):
        super().__init__()
        self.layers = clones(layer, N)
        self.norm = nn.LayerNorm(layer.size, eps=layer.eps) if OPTIONS["stack_norm"] else None

    def forward(self, x, mask):
        "Pass the input (and mask) through each layer in turn."
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x) if self.norm is not None else x


class SublayerConnection(nn.Module):
    """
    A residual connection followed by a layer norm.
    Note for code simplicity the norm is first as opposed to last.
    """

    def __init__(self, size, dropout, eps):
        super().__init__()
        self.norm = nn.LayerNorm(size, eps=eps)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, sublayer):
        "Apply residual connection to any sublayer with the same size."
        if OPTIONS["norm_first"]:
            return x + self.dropout(sublayer(self.norm(x)))
        return self.norm(x + self.dropout(sublayer(x)))


class EncoderLayer(nn.Module):
    "Encoder is made up of self-attn and feed forward (defined below)"

    def __init__(self, size, self_attn, feed_forward, dropout, eps=1e-6):
        super().__init__()
        self.self_attn = self_attn
        self.feed_forward = feed_forward
        self.sublayer = clones(SublayerConnection(size, dropout, eps), 2)
        self.size, self.eps = size, eps

    def forward(self, x, mask):
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, mask))
        return self.sublayer[1](x, self.feed_forward)


class Decoder(nn.Module):
    "Generic N layer decoder with masking."

    def __init__(self, layer, N):
        super().__init__()
        self.layers = clones(layer, N)
        self.norm = nn.LayerNorm(layer.size, eps=layer.eps) if OPTIONS["stack_norm"] else None

    def forward(self, x, memory, src_mask, tgt_mask):
        for layer in self.layers:
            x = layer(x, memory, src_mask, tgt_mask)
        return self.norm(x) if self.norm is not None else x


class DecoderLayer(nn.Module):
    "Decoder is made of self-attn, src-attn, and feed forward (defined below)"

    def __init__(self, size, self_attn, src_attn, feed_forward, dropout, eps=1e-6):
        super().__init__()
        self.size, self.eps = size, eps
        self.self_attn = self_attn
        self.src_attn = src_attn
        self.feed_forward = feed_forward
        self.sublayer = clones(SublayerConnection(size, dropout, eps), 3)

    def forward(self, x, memory, src_mask, tgt_mask):
        m = memory
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, tgt_mask))
        x = self.sublayer[1](x, lambda x: self.src_attn(x, m, m, src_mask))
        return self.sublayer[2](x, self.feed_forward)


def subsequent_mask(size):
    "Mask out subsequent positions."
    attn_shape = (1, size, size)
    mask = torch.triu(torch.ones(attn_shape), diagonal=1).type(torch.uint8)
    return mask == 0


def attention(query, key, value, mask=None):
    "Compute 'Scaled Dot Product Attention'"
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    return torch.matmul(p_attn, value), p_attn


class MultiHeadedAttention(nn.Module):
    def __init__(self, h, d_model, bias=True):
        "Take in model size and number of heads."
        super().__init__()
        assert d_model % h == 0
        # We assume d_v always equals d_k
        self.d_k = d_model // h
        self.h = h
        self.linears = clones(nn.Linear(d_model, d_model, bias=bias), 4)
        self.attn = None

    def forward(self, query, key, value, mask=None):
        if mask is not None:
            # Same mask applied to all h heads.
            mask = mask.unsqueeze(1)
        nbatches = query.size(0)

        # 1) Do all the linear projections in batch from d_model => h x d_k
        query, key, value = [
            lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for lin, x in zip(self.linears, (query, key, value))
        ]

        # 2) Apply attention on all the projected vectors in batch.
        x, self.attn = attention(query, key, value, mask=mask)

        # 3) "Concat" using a view and apply a final linear.
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        del query
        del key
        del value
        return self.linears[-1](x)


class PositionwiseFeedForward(nn.Module):
    "Implements FFN equation."

    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.w_2(self.w_1(x).relu())


class Embeddings(nn.Module):
    def __init__(self, d_model, vocab):
        super().__init__()
        self.lut = nn.Embedding(vocab, d_model)
        self.d_model = d_model

    def forward(self, x):
        return self.lut(x) * math.sqrt(self.d_model)


class PositionalEncoding(nn.Module):
    "Implement the PE function."

    def __init__(self, d_model, dropout, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)

        # Compute the positional encodings once in log space (in float64, cast once).
        pe = torch.zeros(max_len, d_model, dtype=torch.float64)
        position = torch.arange(0, max_len, dtype=torch.float64).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * -(math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.float().unsqueeze(0)
        self.register_buffer("pe", pe)

    def forward(self, x):
        x = x + self.pe[:, : x.size(1)].requires_grad_(False)
        return self.dropout(x)


def make_model(src_vocab, tgt_vocab, N=6, d_model=512, d_ff=2048, h=8, dropout=0.1, eps=1e-6, bias=True):
    "Helper: Construct a model from hyperparameters."
    c = copy.deepcopy
    attn = MultiHeadedAttention(h, d_model, bias)
    ff = PositionwiseFeedForward(d_model, d_ff)
    position = PositionalEncoding(d_model, dropout)
    model = EncoderDecoder(
        Encoder(EncoderLayer(d_model, c(attn), c(ff), dropout, eps), N),
        Decoder(DecoderLayer(d_model, c(attn), c(attn), c(ff), dropout, eps), N),
        nn.Sequential(Embeddings(d_model, src_vocab), c(position)),
        nn.Sequential(Embeddings(d_model, tgt_vocab), c(position)),
        Generator(d_model, tgt_vocab),
    )

    # This was important from their code.
    # Initialize parameters with Glorot / fan_avg.
    for p in model.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    # Three-way weight tying (section 3.4 of the paper).
    model.src_embed[0].lut.weight = model.tgt_embed[0].lut.weight
    model.generator.proj.weight = model.tgt_embed[0].lut.weight
    return model


# --------------------------------------------------------------------------------------------------
# The adapter
# --------------------------------------------------------------------------------------------------


def build(c):
    model = make_model(c.src_vocab, c.tgt_vocab, c.N, c.d_model, c.d_ff, c.h, c.dropout, c.eps, c.attention_bias)
    model.pad = c.pad_id
    return model


def src_mask_of(model, src):
    return (src != model.pad).unsqueeze(-2)


def tgt_mask_of(model, tgt):
    return (tgt != model.pad).unsqueeze(-2) & subsequent_mask(tgt.size(-1))


def encode(model, src):
    return model.encode(src, src_mask_of(model, src))


def decode(model, tgt, memory, src):
    out = model.decode(memory, src_mask_of(model, src), tgt, tgt_mask_of(model, tgt))
    return model.generator(out)


NAMES = {
    "E": "tgt_embed.0.lut.weight",
    "*.{l}.self_attn.W_Q": "*.layers.{l}.self_attn.linears.0.weight",
    "*.{l}.self_attn.W_K": "*.layers.{l}.self_attn.linears.1.weight",
    "*.{l}.self_attn.W_V": "*.layers.{l}.self_attn.linears.2.weight",
    "*.{l}.self_attn.W_O": "*.layers.{l}.self_attn.linears.3.weight",
    "decoder.{l}.cross_attn.W_Q": "decoder.layers.{l}.src_attn.linears.0.weight",
    "decoder.{l}.cross_attn.W_K": "decoder.layers.{l}.src_attn.linears.1.weight",
    "decoder.{l}.cross_attn.W_V": "decoder.layers.{l}.src_attn.linears.2.weight",
    "decoder.{l}.cross_attn.W_O": "decoder.layers.{l}.src_attn.linears.3.weight",
    "*.{l}.ffn.W1": "*.layers.{l}.feed_forward.w_1.weight",
    "*.{l}.ffn.W2": "*.layers.{l}.feed_forward.w_2.weight",
    "*.{l}.norm1": "*.layers.{l}.sublayer.0.norm",
    "*.{l}.norm2": "*.layers.{l}.sublayer.1.norm",
    "decoder.{l}.norm3": "decoder.layers.{l}.sublayer.2.norm",
}

adapter = TorchAdapter(
    build,
    names=NAMES,
    conventions=Conventions(
        mask="keep", batch_first=True, framework="torch",
        supports={"share_embeddings": (True,), "tie_output": (True,)},
        reasons={"share_embeddings": "make_model ties the source, target and generator tables",
                 "tie_output": "make_model ties the source, target and generator tables"}),
    model={"encode": encode, "decode": decode},
    positional_encoding=lambda n, d_model: PositionalEncoding(d_model, 0.0, max_len=n).pe[0],
    multi_head_attention=Component(lambda s: MultiHeadedAttention(s.h, s.d_model, s.bias),
                                   lambda m, q, k, v, keep: m(q, k, v, keep),
                                   names={f"W_{x}": f"linears.{i}.weight" for i, x in enumerate("QKVO")}),
    feed_forward=Component(lambda s: PositionwiseFeedForward(s.d_model, s.d_ff)),
    encoder_layer=Component(
        lambda s: EncoderLayer(s.d_model, MultiHeadedAttention(s.h, s.d_model, s.bias),
                               PositionwiseFeedForward(s.d_model, s.d_ff), 0.0, s.eps),
        lambda layer, x, keep: layer(x, keep.unsqueeze(-2))),
    decoder_layer=Component(
        lambda s: DecoderLayer(s.d_model, MultiHeadedAttention(s.h, s.d_model, s.bias),
                               MultiHeadedAttention(s.h, s.d_model, s.bias),
                               PositionwiseFeedForward(s.d_model, s.d_ff), 0.0, s.eps),
        lambda layer, y, memory, tgt, src: layer(y, memory, src.unsqueeze(-2),
                                                 tgt.unsqueeze(-2) & subsequent_mask(y.size(1)))),
)
