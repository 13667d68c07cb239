"""A Flax Linen Transformer in the style of Flax's own examples (examples/wmt): a config dataclass, ``@nn.compact``
modules named by Linen itself (``encoderblock_0``, ``LayerNorm_0``), ``nn.MultiHeadDotProductAttention`` (kernels per
head), ``nn.Dense``, one ``nn.Embed`` shared by both sides whose ``attend`` gives the logits. Unlike that example it is
the paper's model: post-norm, the embeddings scaled by sqrt(d_model), the interleaved sinusoids, ReLU.

A drafting model (tests/test_adapters_linen.py): ``template --from linen_transformer:Transformer`` drafts its adapter on
``conformance.adapters.linen``.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np
from flax import linen as nn


@dataclass(frozen=True)
class TransformerConfig:
    vocab_size: int
    emb_dim: int = 512
    num_heads: int = 8
    num_layers: int = 6
    mlp_dim: int = 2048
    dropout_rate: float = 0.1
    deterministic: bool = True
    pad_id: int = 0


def sinusoids(length: int, d: int) -> np.ndarray:
    position = np.arange(length)[:, None]
    angle = position / np.power(10000.0, np.arange(0, d, 2) / d)
    table = np.zeros((length, d), dtype=np.float32)
    table[:, 0::2], table[:, 1::2] = np.sin(angle), np.cos(angle)
    return table


class MlpBlock(nn.Module):
    config: TransformerConfig

    @nn.compact
    def __call__(self, x):
        cfg = self.config
        x = nn.relu(nn.Dense(cfg.mlp_dim)(x))
        return nn.Dense(cfg.emb_dim)(x)


class EncoderBlock(nn.Module):
    config: TransformerConfig

    @nn.compact
    def __call__(self, x, mask):
        cfg = self.config
        attended = nn.MultiHeadDotProductAttention(num_heads=cfg.num_heads, deterministic=True)(x, x, mask=mask)
        x = nn.LayerNorm()(x + nn.Dropout(cfg.dropout_rate)(attended, deterministic=cfg.deterministic))
        y = MlpBlock(cfg)(x)
        return nn.LayerNorm()(x + nn.Dropout(cfg.dropout_rate)(y, deterministic=cfg.deterministic))


class DecoderBlock(nn.Module):
    config: TransformerConfig

    @nn.compact
    def __call__(self, y, memory, self_mask, cross_mask):
        cfg = self.config
        drop = nn.Dropout(cfg.dropout_rate)
        attended = nn.MultiHeadDotProductAttention(num_heads=cfg.num_heads, deterministic=True)(y, y, mask=self_mask)
        y = nn.LayerNorm()(y + drop(attended, deterministic=cfg.deterministic))
        read = nn.MultiHeadDotProductAttention(num_heads=cfg.num_heads, deterministic=True)(y, memory,
                                                                                           mask=cross_mask)
        y = nn.LayerNorm()(y + drop(read, deterministic=cfg.deterministic))
        z = MlpBlock(cfg)(y)
        return nn.LayerNorm()(y + drop(z, deterministic=cfg.deterministic))


class Transformer(nn.Module):
    config: TransformerConfig

    def setup(self):
        cfg = self.config
        self.embed = nn.Embed(cfg.vocab_size, cfg.emb_dim, embedding_init=nn.initializers.normal(cfg.emb_dim ** -0.5))
        self.encoder = [EncoderBlock(cfg, name=f"encoderblock_{i}") for i in range(cfg.num_layers)]
        self.decoder = [DecoderBlock(cfg, name=f"encoderdecoderblock_{i}") for i in range(cfg.num_layers)]
        self.dropout = nn.Dropout(cfg.dropout_rate)

    def embedded(self, ids):
        cfg = self.config
        x = self.embed(ids) * jnp.sqrt(cfg.emb_dim) + sinusoids(ids.shape[1], cfg.emb_dim)
        return self.dropout(x, deterministic=cfg.deterministic)

    def encode(self, inputs):
        # only keys are hidden (the paper's masks): a query at a padded position keeps every real key
        mask = nn.make_attention_mask(jnp.ones_like(inputs), inputs != self.config.pad_id)
        x = self.embedded(inputs)
        for block in self.encoder:
            x = block(x, mask)
        return x

    def decode(self, encoded, inputs, targets):
        pad = self.config.pad_id
        self_mask = nn.combine_masks(nn.make_attention_mask(jnp.ones_like(targets), targets != pad),
                                     nn.make_causal_mask(targets))
        cross_mask = nn.make_attention_mask(jnp.ones_like(targets), inputs != pad)
        y = self.embedded(targets)
        for block in self.decoder:
            y = block(y, encoded, self_mask, cross_mask)
        return self.embed.attend(y)

    def __call__(self, inputs, targets):
        return self.decode(self.encode(inputs), inputs, targets)


def make_transformer(vocab_size, d_model, n_heads, n_layers, d_ff):
    """A factory, as a training script writes one: drafts are made from the class (its config planned from the suite's
    sizes), and the draft of the function says so."""
    return Transformer(TransformerConfig(vocab_size, d_model, n_heads, n_layers, d_ff))


class ShiftingTransformer(Transformer):
    """As Flax's wmt example trains: decode shifts its targets right itself (a 0 first, the last dropped)."""

    def decode(self, encoded, inputs, targets):
        shifted = jnp.pad(targets, ((0, 0), (1, 0)))[:, :-1]
        return super().decode(encoded, inputs, shifted)
