"""A Transformer written around ``torch.nn.functional.scaled_dot_product_attention`` (the fused / flash
kernels), as recent PyTorch code does: one ``Attention`` module with ``q``/``k``/``v``/``o`` projections that
passes either a boolean ``attn_mask`` or ``is_causal`` to the kernel (the kernel accepts one or the other),
``Block``s configured by a ``causal`` flag, and a decoder whose blocks are built ``causal=True``.

Model only: the adapter gives the model, the attention formula and the layers.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from conformance import Conventions
from conformance.adapters.torch import Component, TorchAdapter

# How the decoder blocks call the kernel.
DECODER_KERNEL = {"self": "is_causal", "cross": "is_causal"}


def sinusoids(n, d):
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    pe = torch.zeros(n, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * inv_freq)
    pe[:, 1::2] = torch.cos(pos * inv_freq)
    return pe.float()


def attention_weights(q, k, keep=None, is_causal=False):
    """The probabilities the kernel computes (it does not return them)."""
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if is_causal:
        L, S = q.size(-2), k.size(-2)
        scores = scores.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float("-inf"))
    if keep is not None:
        scores = scores.masked_fill(~keep, float("-inf"))
    return torch.nan_to_num(scores.softmax(-1))


class Attention(nn.Module):
    def __init__(self, dim, n_heads, bias=True):
        super().__init__()
        self.n_heads = n_heads
        self.q = nn.Linear(dim, dim, bias=bias)
        self.k = nn.Linear(dim, dim, bias=bias)
        self.v = nn.Linear(dim, dim, bias=bias)
        self.o = nn.Linear(dim, dim, bias=bias)
        self.keep_weights = False
        self.attn = None

    def forward(self, x, context=None, attn_mask=None, is_causal=False):
        context = x if context is None else context
        B, L, D = x.shape
        S = context.shape[1]
        q = self.q(x).view(B, L, self.n_heads, -1).transpose(1, 2)
        k = self.k(context).view(B, S, self.n_heads, -1).transpose(1, 2)
        v = self.v(context).view(B, S, self.n_heads, -1).transpose(1, 2)
        if self.keep_weights:
            self.attn = attention_weights(q, k, attn_mask, is_causal)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal)
        return self.o(out.transpose(1, 2).reshape(B, L, D))


class MLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(dim, hidden), nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim, n_heads, hidden, dropout, eps, bias, causal=False, cross=False):
        super().__init__()
        self.causal = causal
        self.self_attn, self.norm1 = Attention(dim, n_heads, bias), nn.LayerNorm(dim, eps=eps)
        self.cross_attn = Attention(dim, n_heads, bias) if cross else None
        self.norm2 = nn.LayerNorm(dim, eps=eps)
        self.mlp = MLP(dim, hidden)
        self.norm3 = nn.LayerNorm(dim, eps=eps) if cross else None
        self.drop = nn.Dropout(dropout)

    def _kernel(self, which, keep):
        """(attn_mask, is_causal) for the kernel: a boolean keep mask, or the kernel's own causal mask."""
        if not self.causal:
            return keep, False
        if DECODER_KERNEL[which] == "is_causal":
            return None, True
        if which == "self":
            n = keep.size(-1)
            return keep & torch.ones(n, n, dtype=torch.bool, device=keep.device).tril(), False
        return keep, False

    def forward(self, x, keep, memory=None, memory_keep=None):
        mask, causal = self._kernel("self", keep)
        x = self.norm1(x + self.drop(self.self_attn(x, attn_mask=mask, is_causal=causal)))
        if self.cross_attn is None:
            return self.norm2(x + self.drop(self.mlp(x)))
        mask, causal = self._kernel("cross", memory_keep)
        x = self.norm2(x + self.drop(self.cross_attn(x, memory, attn_mask=mask, is_causal=causal)))
        return self.norm3(x + self.drop(self.mlp(x)))


class EncoderDecoder(nn.Module):
    def __init__(self, vocab, dim, n_heads, hidden, depth, dropout, eps, bias, pad):
        super().__init__()
        self.pad, self.dim = pad, dim
        self.embed = nn.Embedding(vocab, dim)
        self.encoder = nn.ModuleList([Block(dim, n_heads, hidden, dropout, eps, bias) for _ in range(depth)])
        self.decoder = nn.ModuleList([Block(dim, n_heads, hidden, dropout, eps, bias, causal=True, cross=True)
                                      for _ in range(depth)])
        self.drop = nn.Dropout(dropout)

    def embed_tokens(self, ids):
        return self.drop(self.embed(ids) * math.sqrt(self.dim) + sinusoids(ids.size(1), self.dim))

    def encode(self, src):
        keep = (src != self.pad)[:, None, None, :]  # (B, 1, 1, S): every head and query
        x = self.embed_tokens(src)
        for block in self.encoder:
            x = block(x, keep)
        return x

    def decode(self, tgt, memory, src):
        tgt_keep = (tgt != self.pad)[:, None, None, :]
        src_keep = (src != self.pad)[:, None, None, :]
        y = self.embed_tokens(tgt)
        for block in self.decoder:
            y = block(y, tgt_keep, memory, src_keep)
        return y @ self.embed.weight.T

    def forward(self, src, tgt):
        return self.decode(tgt, self.encode(src), src)


def keep_attention_weights(model, seed):
    for module in model.module.modules():
        if isinstance(module, Attention):
            module.keep_weights = True


NAMES = {
    "E": "embed.weight",
    **{f"*.{{l}}.self_attn.W_{x}": f"*.{{l}}.self_attn.{x.lower()}.weight" for x in "QKVO"},
    **{f"decoder.{{l}}.cross_attn.W_{x}": f"decoder.{{l}}.cross_attn.{x.lower()}.weight" for x in "QKVO"},
    "*.{l}.ffn.W1": "*.{l}.mlp.fc1.weight",
    "*.{l}.ffn.W2": "*.{l}.mlp.fc2.weight",
    "*.{l}.norm1": "*.{l}.norm1",
    "*.{l}.norm2": "*.{l}.norm2",
    "decoder.{l}.norm3": "decoder.{l}.norm3",
}


def sdpa(q, k, v, keep):
    """The kernel on (B, L, d_k) inputs, with the probabilities written out beside it."""
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    return out, attention_weights(q, k, keep)


adapter = TorchAdapter(
    lambda c: EncoderDecoder(c.src_vocab, c.d_model, c.h, c.d_ff, c.N, c.dropout, c.eps, c.attention_bias,
                             c.pad_id),
    names=NAMES,
    conventions=Conventions(
        mask="keep", batch_first=True, framework="torch (F.scaled_dot_product_attention)",
        supports={"share_embeddings": (True,), "tie_output": (True,)},
        reasons={"share_embeddings": "one embedding", "tie_output": "logits read the embedding"}),
    init=keep_attention_weights,
    scaled_dot_product_attention=sdpa,
    encoder_layer=Component(lambda s: Block(s.d_model, s.h, s.d_ff, 0.0, s.eps, s.bias),
                            lambda block, x, keep: block(x, keep[:, None, None, :])),
    decoder_layer=Component(
        lambda s: Block(s.d_model, s.h, s.d_ff, 0.0, s.eps, s.bias, causal=True, cross=True),
        lambda block, y, memory, tgt, src: block(y, tgt[:, None, None, :], memory, src[:, None, None, :])),
)
