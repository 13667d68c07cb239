"""A Keras 3 Transformer in the style of the TensorFlow tutorial ("Neural machine translation with a Transformer and
Keras"): an ``Encoder`` layer holding its ``EncoderLayer``s (so layers are numbered inside a numbered stack), and
``MultiHeadAttention(num_heads, key_dim=d_model)``: heads d_model wide, where the paper's are d_model / h. A drafting
model (tests/test_adapters_keras.py): no canonical weight fits those kernels, and the draft must say so."""

import keras
from keras import layers


class EncoderLayer(layers.Layer):
    def __init__(self, d_model, num_heads, dff, **kwargs):
        super().__init__(**kwargs)
        self.mha = layers.MultiHeadAttention(num_heads=num_heads, key_dim=d_model)
        self.norm1 = layers.LayerNormalization()
        self.ffn = keras.Sequential([layers.Dense(dff, activation="relu"), layers.Dense(d_model)])
        self.norm2 = layers.LayerNormalization()

    def call(self, x):
        x = self.norm1(x + self.mha(query=x, value=x, key=x))
        return self.norm2(x + self.ffn(x))


class DecoderLayer(layers.Layer):
    def __init__(self, d_model, num_heads, dff, **kwargs):
        super().__init__(**kwargs)
        self.self_mha = layers.MultiHeadAttention(num_heads=num_heads, key_dim=d_model)
        self.norm1 = layers.LayerNormalization()
        self.cross_mha = layers.MultiHeadAttention(num_heads=num_heads, key_dim=d_model)
        self.norm2 = layers.LayerNormalization()
        self.ffn = keras.Sequential([layers.Dense(dff, activation="relu"), layers.Dense(d_model)])
        self.norm3 = layers.LayerNormalization()

    def call(self, x, memory):
        x = self.norm1(x + self.self_mha(query=x, value=x, key=x, use_causal_mask=True))
        x = self.norm2(x + self.cross_mha(query=x, value=memory, key=memory))
        return self.norm3(x + self.ffn(x))


class Encoder(layers.Layer):
    def __init__(self, num_layers, d_model, num_heads, dff, vocab_size, **kwargs):
        super().__init__(**kwargs)
        self.embedding = layers.Embedding(vocab_size, d_model)
        self.enc_layers = [EncoderLayer(d_model, num_heads, dff) for _ in range(num_layers)]

    def call(self, x):
        x = self.embedding(x)
        for layer in self.enc_layers:
            x = layer(x)
        return x


class Decoder(layers.Layer):
    def __init__(self, num_layers, d_model, num_heads, dff, vocab_size, **kwargs):
        super().__init__(**kwargs)
        self.embedding = layers.Embedding(vocab_size, d_model)
        self.dec_layers = [DecoderLayer(d_model, num_heads, dff) for _ in range(num_layers)]

    def call(self, x, memory):
        x = self.embedding(x)
        for layer in self.dec_layers:
            x = layer(x, memory)
        return x


class Transformer(keras.Model):
    def __init__(self, num_layers, d_model, num_heads, dff, input_vocab_size, target_vocab_size, **kwargs):
        super().__init__(**kwargs)
        self.encoder = Encoder(num_layers, d_model, num_heads, dff, input_vocab_size)
        self.decoder = Decoder(num_layers, d_model, num_heads, dff, target_vocab_size)
        self.final_layer = layers.Dense(target_vocab_size)

    def encode(self, src):
        return self.encoder(src)

    def decode(self, tgt, memory, src):
        return self.final_layer(self.decoder(tgt, memory))
