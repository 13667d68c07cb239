"""A Transformer as a JAX user writes it with Flax NNX: Flax's own MultiHeadAttention, Linear, LayerNorm and Embed.

The model of docs/walkthrough-jax.md. Post-norm layers, sinusoidal positions computed on the fly, one embedding
table for both sides whose ``attend`` gives the logits (§3.4). Masks follow Flax: True where a query may attend.
"""

import math

import jax.numpy as jnp
from flax import nnx


def sinusoids(length: int, d_model: int) -> jnp.ndarray:
    position = jnp.arange(length)[:, None]
    rate = jnp.exp(jnp.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
    table = jnp.zeros((length, d_model))
    return table.at[:, 0::2].set(jnp.sin(position * rate)).at[:, 1::2].set(jnp.cos(position * rate))


class FeedForward(nnx.Module):
    def __init__(self, d_model: int, d_ff: int, *, rngs: nnx.Rngs):
        self.wi = nnx.Linear(d_model, d_ff, rngs=rngs)
        self.wo = nnx.Linear(d_ff, d_model, rngs=rngs)

    def __call__(self, x):
        return self.wo(nnx.relu(self.wi(x)))


def attention(d_model: int, num_heads: int, rngs: nnx.Rngs) -> nnx.MultiHeadAttention:
    return nnx.MultiHeadAttention(num_heads=num_heads, in_features=d_model, decode=False, rngs=rngs)


class EncoderBlock(nnx.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout_rate, *, rngs: nnx.Rngs):
        self.attn = attention(d_model, num_heads, rngs)
        self.ln_attn = nnx.LayerNorm(d_model, epsilon=1e-6, rngs=rngs)
        self.mlp = FeedForward(d_model, d_ff, rngs=rngs)
        self.ln_mlp = nnx.LayerNorm(d_model, epsilon=1e-6, rngs=rngs)
        self.dropout = nnx.Dropout(dropout_rate, rngs=rngs)

    def __call__(self, x, mask):
        x = self.ln_attn(x + self.dropout(self.attn(x, mask=mask)))
        return self.ln_mlp(x + self.dropout(self.mlp(x)))


class DecoderBlock(nnx.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout_rate, *, rngs: nnx.Rngs):
        self.self_attn = attention(d_model, num_heads, rngs)
        self.ln_self = nnx.LayerNorm(d_model, epsilon=1e-6, rngs=rngs)
        self.cross_attn = attention(d_model, num_heads, rngs)
        self.ln_cross = nnx.LayerNorm(d_model, epsilon=1e-6, rngs=rngs)
        self.mlp = FeedForward(d_model, d_ff, rngs=rngs)
        self.ln_mlp = nnx.LayerNorm(d_model, epsilon=1e-6, rngs=rngs)
        self.dropout = nnx.Dropout(dropout_rate, rngs=rngs)

    def __call__(self, y, memory, self_mask, cross_mask):
        y = self.ln_self(y + self.dropout(self.self_attn(y, mask=self_mask)))
        y = self.ln_cross(y + self.dropout(self.cross_attn(y, memory, memory, mask=cross_mask)))
        return self.ln_mlp(y + self.dropout(self.mlp(y)))


class Transformer(nnx.Module):
    def __init__(self, vocab_size: int, d_model: int, num_heads: int, d_ff: int, num_layers: int,
                 dropout_rate: float, pad_id: int, *, rngs: nnx.Rngs):
        self.d_model, self.pad_id = d_model, pad_id
        self.embed = nnx.Embed(vocab_size, d_model, rngs=rngs)
        self.encoder = nnx.List([EncoderBlock(d_model, num_heads, d_ff, dropout_rate, rngs=rngs)
                                 for _ in range(num_layers)])
        self.decoder = nnx.List([DecoderBlock(d_model, num_heads, d_ff, dropout_rate, rngs=rngs)
                                 for _ in range(num_layers)])
        self.dropout = nnx.Dropout(dropout_rate, rngs=rngs)

    def embed_positions(self, ids):
        x = self.embed(ids) * math.sqrt(self.d_model) + sinusoids(ids.shape[1], self.d_model)
        return self.dropout(x)

    def keys(self, ids):
        """(B, 1, 1, L): which keys a query may read, the same for every head and query: the real tokens."""
        return (ids != self.pad_id)[:, None, None, :]

    def encode(self, src):
        mask = self.keys(src)
        x = self.embed_positions(src)
        for block in self.encoder:
            x = block(x, mask)
        return x

    def decode(self, tgt, memory, src):
        self_mask = nnx.combine_masks(nnx.make_causal_mask(tgt), self.keys(tgt))
        cross_mask = self.keys(src)
        y = self.embed_positions(tgt)
        for block in self.decoder:
            y = block(y, memory, self_mask, cross_mask)
        return self.embed.attend(y)

    def __call__(self, src, tgt):
        return self.decode(tgt, self.encode(src), src)
