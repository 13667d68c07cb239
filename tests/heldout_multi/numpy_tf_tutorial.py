"""A pure NumPy (float64) port of the TensorFlow "Transformer model for language understanding" tutorial:
``positional_encoding`` with ``get_angles``, ``scaled_dot_product_attention`` with the mask times -1e9 added
to the logits, ``create_padding_mask`` / ``create_look_ahead_mask``, Keras-like ``Dense`` and
``LayerNormalization`` objects, an ``Encoder`` and a ``Decoder`` with their own embeddings and a
``final_layer`` Dense over the target vocabulary.

A model-only adapter: ``build_model`` and nothing else.
"""

import numpy as np

from conformance import Conventions

# As the tutorial builds them.
LAYER_NORM_EPSILON = 1e-6
CONCAT_SIN_COS = True
FINAL_LAYER_USE_BIAS = True


# --------------------------------------------------------------------------------------------------
# The tutorial's functions, in NumPy
# --------------------------------------------------------------------------------------------------


def get_angles(pos, i, d_model):
    angle_rates = 1 / np.power(10000, (2 * (i // 2)) / np.float64(d_model))
    return pos * angle_rates


def positional_encoding(position, d_model):
    angle_rads = get_angles(np.arange(position)[:, np.newaxis], np.arange(d_model)[np.newaxis, :], d_model)
    if CONCAT_SIN_COS:
        # apply sin to even indices in the array; 2i, cos to odd indices; 2i+1, then concatenate
        sines = np.sin(angle_rads[:, 0::2])
        cosines = np.cos(angle_rads[:, 1::2])
        pos_encoding = np.concatenate([sines, cosines], axis=-1)
    else:
        pos_encoding = angle_rads.copy()
        pos_encoding[:, 0::2] = np.sin(angle_rads[:, 0::2])
        pos_encoding[:, 1::2] = np.cos(angle_rads[:, 1::2])
    return pos_encoding[np.newaxis, ...]


def create_padding_mask(seq, pad):
    seq = (seq == pad).astype(np.float64)
    # add extra dimensions to add the padding to the attention logits.
    return seq[:, np.newaxis, np.newaxis, :]  # (batch_size, 1, 1, seq_len)


def create_look_ahead_mask(size):
    return 1 - np.tril(np.ones((size, size)))  # (seq_len, seq_len)


def softmax(x, axis=-1):
    x = x - x.max(axis=axis, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def scaled_dot_product_attention(q, k, v, mask):
    matmul_qk = q @ np.swapaxes(k, -1, -2)  # (..., seq_len_q, seq_len_k)
    dk = np.float64(k.shape[-1])
    scaled_attention_logits = matmul_qk / np.sqrt(dk)
    if mask is not None:
        scaled_attention_logits = scaled_attention_logits + (mask * -1e9)
    attention_weights = softmax(scaled_attention_logits, axis=-1)
    return attention_weights @ v, attention_weights


class Dense:
    def __init__(self, params, name, activation=None):
        self.params, self.name, self.activation = params, name, activation

    def __call__(self, x):
        y = x @ self.params[self.name + "/kernel"]
        bias = self.params.get(self.name + "/bias")
        if bias is not None:
            y = y + bias
        return np.maximum(y, 0.0) if self.activation == "relu" else y


class LayerNormalization:
    def __init__(self, params, name, epsilon):
        self.params, self.name, self.epsilon = params, name, epsilon

    def __call__(self, x):
        mean = x.mean(-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(variance + self.epsilon) * self.params[self.name + "/gamma"] \
            + self.params[self.name + "/beta"]


class MultiHeadAttention:
    def __init__(self, params, name, d_model, num_heads):
        self.num_heads, self.d_model = num_heads, d_model
        self.depth = d_model // num_heads
        self.wq, self.wk, self.wv = (Dense(params, f"{name}/{w}") for w in ("wq", "wk", "wv"))
        self.dense = Dense(params, f"{name}/dense")

    def split_heads(self, x, batch_size):
        x = x.reshape(batch_size, -1, self.num_heads, self.depth)
        return x.transpose(0, 2, 1, 3)

    def __call__(self, v, k, q, mask):
        batch_size = q.shape[0]
        q = self.split_heads(self.wq(q), batch_size)
        k = self.split_heads(self.wk(k), batch_size)
        v = self.split_heads(self.wv(v), batch_size)
        scaled_attention, attention_weights = scaled_dot_product_attention(q, k, v, mask)
        scaled_attention = scaled_attention.transpose(0, 2, 1, 3)
        concat_attention = scaled_attention.reshape(batch_size, -1, self.d_model)
        return self.dense(concat_attention), attention_weights


def point_wise_feed_forward_network(params, name):
    first, second = Dense(params, f"{name}/dense", activation="relu"), Dense(params, f"{name}/dense_1")
    return lambda x: second(first(x))


class EncoderLayer:
    def __init__(self, params, name, d_model, num_heads, eps):
        self.mha = MultiHeadAttention(params, f"{name}/mha", d_model, num_heads)
        self.ffn = point_wise_feed_forward_network(params, f"{name}/ffn")
        self.layernorm1 = LayerNormalization(params, f"{name}/layernorm1", eps)
        self.layernorm2 = LayerNormalization(params, f"{name}/layernorm2", eps)

    def __call__(self, x, mask):
        attn_output, weights = self.mha(x, x, x, mask)
        out1 = self.layernorm1(x + attn_output)
        out2 = self.layernorm2(out1 + self.ffn(out1))
        return out2, weights


class DecoderLayer:
    def __init__(self, params, name, d_model, num_heads, eps):
        self.mha1 = MultiHeadAttention(params, f"{name}/mha1", d_model, num_heads)
        self.mha2 = MultiHeadAttention(params, f"{name}/mha2", d_model, num_heads)
        self.ffn = point_wise_feed_forward_network(params, f"{name}/ffn")
        self.layernorm1 = LayerNormalization(params, f"{name}/layernorm1", eps)
        self.layernorm2 = LayerNormalization(params, f"{name}/layernorm2", eps)
        self.layernorm3 = LayerNormalization(params, f"{name}/layernorm3", eps)

    def __call__(self, x, enc_output, look_ahead_mask, padding_mask):
        attn1, block1 = self.mha1(x, x, x, look_ahead_mask)
        out1 = self.layernorm1(attn1 + x)
        attn2, block2 = self.mha2(enc_output, enc_output, out1, padding_mask)
        out2 = self.layernorm2(attn2 + out1)
        out3 = self.layernorm3(self.ffn(out2) + out2)
        return out3, block1, block2


class Transformer:
    def __init__(self, params, num_layers, d_model, num_heads, pad, eps):
        self.params, self.d_model, self.pad = params, d_model, pad
        self.enc_layers = [EncoderLayer(params, f"encoder/layer_{i}", d_model, num_heads, eps)
                           for i in range(num_layers)]
        self.dec_layers = [DecoderLayer(params, f"decoder/layer_{i}", d_model, num_heads, eps)
                           for i in range(num_layers)]
        self.final_layer = Dense(params, "final_layer")

    def embed(self, table, x):
        seq_len = x.shape[1]
        emb = self.params[table][x] * np.sqrt(np.float64(self.d_model))
        return emb + positional_encoding(seq_len, self.d_model)[:, :seq_len, :]

    def encoder(self, inp, weights=None):
        mask = create_padding_mask(inp, self.pad)
        x = self.embed("encoder/embedding", inp)
        for i, layer in enumerate(self.enc_layers):
            x, w = layer(x, mask)
            if weights is not None:
                weights[f"encoder.{i}.self_attn"] = w
        return x

    def decoder(self, tar, enc_output, inp, weights=None):
        look_ahead_mask = create_look_ahead_mask(tar.shape[1])
        dec_target_padding_mask = create_padding_mask(tar, self.pad)
        combined_mask = np.maximum(dec_target_padding_mask, look_ahead_mask)
        dec_padding_mask = create_padding_mask(inp, self.pad)
        x = self.embed("decoder/embedding", tar)
        for i, layer in enumerate(self.dec_layers):
            x, block1, block2 = layer(x, enc_output, combined_mask, dec_padding_mask)
            if weights is not None:
                weights[f"decoder.{i}.self_attn"], weights[f"decoder.{i}.cross_attn"] = block1, block2
        return self.final_layer(x)


# --------------------------------------------------------------------------------------------------
# Canonical names <-> the tutorial's variable names
# --------------------------------------------------------------------------------------------------

ATTENTION = {"W_Q": "wq/kernel", "b_Q": "wq/bias", "W_K": "wk/kernel", "b_K": "wk/bias", "W_V": "wv/kernel",
             "b_V": "wv/bias", "W_O": "dense/kernel", "b_O": "dense/bias"}
FFN = {"W1": "dense/kernel", "b1": "dense/bias", "W2": "dense_1/kernel", "b2": "dense_1/bias"}
NORM = {"gamma": "gamma", "beta": "beta"}
ENCODER = {"self_attn": "mha", "norm1": "layernorm1", "ffn": "ffn", "norm2": "layernorm2"}
DECODER = {"self_attn": "mha1", "norm1": "layernorm1", "cross_attn": "mha2", "norm2": "layernorm2",
           "ffn": "ffn", "norm3": "layernorm3"}


def variable_name(canonical):
    if canonical == "E_src":
        return "encoder/embedding"
    if canonical == "E_tgt":
        return "decoder/embedding"
    if canonical == "W_out":
        return "final_layer/kernel"
    stack, layer, sub, leaf = canonical.split(".")
    table = ENCODER if stack == "encoder" else DECODER
    kind = ATTENTION if sub.endswith("attn") else FFN if sub == "ffn" else NORM
    return f"{stack}/layer_{layer}/{table[sub]}/{kind[leaf]}"


class TutorialModel:
    def __init__(self, config, seed):
        from conformance.config import ModelConfig
        from conformance.weights import model_shapes

        self.config = ModelConfig.from_dict(config)
        c = self.config
        self.shapes = model_shapes(c)
        rng = np.random.default_rng(seed)
        self.params = {}
        for name, shape in self.shapes.items():  # glorot uniform kernels, zero biases, unit gammas
            leaf = name.rsplit(".", 1)[-1]
            if leaf == "gamma":
                value = np.ones(shape)
            elif len(shape) == 1:
                value = np.zeros(shape)
            else:
                limit = np.sqrt(6.0 / sum(shape))
                value = rng.uniform(-limit, limit, shape)
            self.params[variable_name(name)] = value
        if FINAL_LAYER_USE_BIAS:
            self.params["final_layer/bias"] = np.zeros(c.tgt_vocab)
        self.net = Transformer(self.params, c.N, c.d_model, c.h, c.pad_id, LAYER_NORM_EPSILON)

    def load_weights(self, weights):
        for name in self.shapes:
            self.params[variable_name(name)] = np.asarray(weights[name], dtype=np.float64).copy()
        if "final_layer/bias" in self.params:
            self.params["final_layer/bias"] = np.zeros(self.config.tgt_vocab)

    def dump_weights(self):
        return {name: self.params[variable_name(name)].copy() for name in self.shapes}

    def unmapped_parameters(self):
        return {"final_layer/bias": self.config.tgt_vocab} if "final_layer/bias" in self.params else {}

    def encode(self, src):
        return self.net.encoder(np.asarray(src))

    def decode(self, tgt_in, memory, src):
        return self.net.decoder(np.asarray(tgt_in), np.asarray(memory, dtype=np.float64), np.asarray(src))

    def forward(self, src, tgt_in):
        return self.decode(tgt_in, self.encode(src), src)

    def attention_weights(self, src, tgt_in):
        weights = {}
        src, tgt_in = np.asarray(src), np.asarray(tgt_in)
        self.net.decoder(tgt_in, self.net.encoder(src, weights), src, weights)
        return weights


class TutorialAdapter:
    conventions = Conventions(
        mask="keep", batch_first=True, dtype="float64", framework="numpy",
        supports={"share_embeddings": (False,), "tie_output": (False,), "attention_bias": (True,)},
        reasons={"share_embeddings": "the Encoder and the Decoder each own an Embedding layer",
                 "tie_output": "final_layer is a Dense layer of its own",
                 "attention_bias": "every Dense layer carries a bias"})
    model_class = TutorialModel

    def build_model(self, config, seed):
        return TutorialModel(config, int(seed))


adapter = TutorialAdapter()
