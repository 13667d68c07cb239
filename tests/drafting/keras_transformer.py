"""A Transformer as a Keras 3 user writes it (any backend): keras.layers.MultiHeadAttention, Dense, LayerNormalization
and Embedding, post-norm layers, the logits from the embedding table itself (§3.4), sinusoids computed on the fly.
``template --from keras_transformer:Transformer`` drafts its adapter (tests/test_adapters_keras.py)."""

import math

import keras
from keras import ops


def sinusoids(length, d_model):
    position = ops.cast(ops.arange(length), "float32")[:, None]
    rate = ops.exp(ops.cast(ops.arange(0, d_model, 2), "float32") * (-math.log(10000.0) / d_model))
    angles = position * rate[None, :]
    return ops.reshape(ops.stack([ops.sin(angles), ops.cos(angles)], axis=-1), (length, d_model))


class EncoderLayer(keras.layers.Layer):
    def __init__(self, d_model, num_heads, d_ff, dropout, **kwargs):
        super().__init__(**kwargs)
        self.attention = keras.layers.MultiHeadAttention(num_heads, d_model // num_heads)
        self.attention_norm = keras.layers.LayerNormalization(epsilon=1e-6)
        self.hidden = keras.layers.Dense(d_ff, activation="relu")
        self.out = keras.layers.Dense(d_model)
        self.ffn_norm = keras.layers.LayerNormalization(epsilon=1e-6)
        self.dropout = keras.layers.Dropout(dropout)

    def call(self, x, mask, training=False):
        x = self.attention_norm(x + self.dropout(self.attention(x, x, attention_mask=mask), training=training))
        return self.ffn_norm(x + self.dropout(self.out(self.hidden(x)), training=training))


class DecoderLayer(keras.layers.Layer):
    def __init__(self, d_model, num_heads, d_ff, dropout, **kwargs):
        super().__init__(**kwargs)
        self.self_attention = keras.layers.MultiHeadAttention(num_heads, d_model // num_heads)
        self.self_norm = keras.layers.LayerNormalization(epsilon=1e-6)
        self.cross_attention = keras.layers.MultiHeadAttention(num_heads, d_model // num_heads)
        self.cross_norm = keras.layers.LayerNormalization(epsilon=1e-6)
        self.hidden = keras.layers.Dense(d_ff, activation="relu")
        self.out = keras.layers.Dense(d_model)
        self.ffn_norm = keras.layers.LayerNormalization(epsilon=1e-6)
        self.dropout = keras.layers.Dropout(dropout)

    def call(self, y, memory, self_mask, cross_mask, training=False):
        y = self.self_norm(y + self.dropout(self.self_attention(y, y, attention_mask=self_mask), training=training))
        y = self.cross_norm(y + self.dropout(self.cross_attention(y, memory, attention_mask=cross_mask),
                                             training=training))
        return self.ffn_norm(y + self.dropout(self.out(self.hidden(y)), training=training))


class Transformer(keras.Model):
    def __init__(self, vocab_size, d_model, num_heads, d_ff, num_layers, dropout, pad_id, **kwargs):
        super().__init__(**kwargs)
        self.d_model, self.pad_id = d_model, pad_id
        self.embedding = keras.layers.Embedding(vocab_size, d_model)
        self.encoder_layers = [EncoderLayer(d_model, num_heads, d_ff, dropout) for _ in range(num_layers)]
        self.decoder_layers = [DecoderLayer(d_model, num_heads, d_ff, dropout) for _ in range(num_layers)]

    def embed(self, ids):
        return self.embedding(ids) * math.sqrt(self.d_model) + sinusoids(ops.shape(ids)[1], self.d_model)

    def keys(self, ids, queries):
        """(B, queries, L): every query may read the real tokens, never the padding."""
        keep = ops.not_equal(ids, self.pad_id)[:, None, :]
        return ops.repeat(keep, queries, axis=1)

    def encode(self, src):
        x, mask = self.embed(src), self.keys(src, ops.shape(src)[1])
        for layer in self.encoder_layers:
            x = layer(x, mask)
        return x

    def decode(self, tgt, memory, src):
        length = ops.shape(tgt)[1]
        causal = ops.tril(ops.ones((length, length), "bool"))[None]
        self_mask = ops.logical_and(self.keys(tgt, length), causal)
        cross_mask = self.keys(src, length)
        y = self.embed(tgt)
        for layer in self.decoder_layers:
            y = layer(y, memory, self_mask, cross_mask)
        return ops.matmul(y, ops.transpose(self.embedding.embeddings))

    def call(self, inputs):
        src, tgt = inputs
        return self.decode(tgt, self.encode(src), src)
