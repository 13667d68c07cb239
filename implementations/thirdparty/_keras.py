"""What the keras-hub built-ins share: the backend guard, the paper's encoder-decoder assembled from keras-hub's layers,
the canonical names mapped onto Keras variable paths, and the parts.

keras-hub has the layers (``TransformerEncoder``, ``TransformerDecoder``, ``SinePositionEncoding``,
``ReversibleEmbedding``) but no encoder-decoder built from them; the model here assembles them, and multiplies the
embedding by sqrt(d_model) (§3.4) itself. Import this module after setting
``KERAS_BACKEND``: Keras reads it once, when first imported.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import math
import os
import sys
from contextlib import contextmanager

import numpy as np

from conformance import Conventions
from conformance.config import ModelConfig
from conformance.weights import model_shapes

KERAS_HUB_FIX = "pip install --no-deps -r requirements-keras-hub.txt"  # keras-hub without tensorflow: pyproject.toml


def require(package: str, extra: str, name: str, fix: str | None = None):
    """Import ``package``, or raise ModuleNotFoundError whose message names what installs it (the extra, or ``fix``)."""
    try:
        return importlib.import_module(package)
    except ModuleNotFoundError as exc:
        fix = fix or f"pip install 'transformer-conformance[{extra}]'"
        raise ModuleNotFoundError(f"the built-in {name!r} adapts {package}, which is not installed. Fix: {fix}",
                                  name=package.partition(".")[0]) from exc


def check_backend(backend: str) -> None:
    """A process holds one Keras backend, the one keras was first imported with."""
    loaded = sys.modules.get("keras")
    if loaded is not None and loaded.backend.backend() != backend:
        raise ImportError(f"the built-in 'keras-hub-{backend}' runs Keras on {backend}, but keras is already imported"
                          f" on {loaded.backend.backend()} in this process: keras-hub-jax and keras-hub-torch cannot"
                          " share a process. Run one per process, or certify with --isolate")


BACKEND = os.environ.get("KERAS_BACKEND", "jax")
check_backend(BACKEND)
require(BACKEND, "keras" if BACKEND == "jax" else "torch", f"keras-hub-{BACKEND}")
keras = require("keras", "keras", f"keras-hub-{BACKEND}")
keras_hub = require("keras_hub", "keras", f"keras-hub-{BACKEND}", KERAS_HUB_FIX)
ops = keras.ops

# Canonical names (conformance.weights) -> Keras variable paths below a layer. A kernel of MultiHeadAttention is
# per head: query/key/value (d_model, h, d_k), output (h, d_k, d_model), biases (h, d_k); each is the canonical
# x @ W matrix reshaped, head i in columns (rows for W_O) [i*d_k:(i+1)*d_k].
PROJECTIONS = {"Q": "query", "K": "key", "V": "value", "O": "attention_output"}
ATTENTION = {**{f"W_{x}": f"{p}/kernel" for x, p in PROJECTIONS.items()},
             **{f"b_{x}": f"{p}/bias" for x, p in PROJECTIONS.items()}}
FFN = {"ffn.W1": "feedforward_intermediate_dense/kernel", "ffn.b1": "feedforward_intermediate_dense/bias",
       "ffn.W2": "feedforward_output_dense/kernel", "ffn.b2": "feedforward_output_dense/bias"}
SUBLAYERS = {  # keras-hub's sublayer names, per stack
    "encoder": {"self_attn": "self_attention_layer", "norm1": "self_attention_layer_norm",
                "norm2": "feedforward_layer_norm"},
    "decoder": {"self_attn": "self_attention", "norm1": "self_attention_layer_norm", "cross_attn": "cross_attention",
                "norm2": "cross_attention_layer_norm", "norm3": "feedforward_layer_norm"},
}


def layer_path(stack: str, name: str) -> str:
    """``self_attn.W_Q`` -> ``self_attention_layer/query/kernel`` (encoder); ``norm1.gamma`` -> ``.../gamma``."""
    if name in FFN:
        return FFN[name]
    sublayer, leaf = name.split(".")
    return f"{SUBLAYERS[stack][sublayer]}/{ATTENTION.get(leaf, leaf)}"


def to_numpy(x) -> np.ndarray:
    return np.asarray(ops.convert_to_numpy(x))


def variables_by_path(layer, strip: int = 0) -> dict:
    """A layer's variables by path, its first ``strip`` components (the layer's own name) removed."""
    return {v.path.split("/", strip)[-1]: v for v in layer.weights}


def assign(variables: dict, paths: dict[str, str], weights: dict[str, np.ndarray]) -> None:
    """Each canonical weight into its variable, reshaped to the variable's (per-head) shape; every variable the
    weights do not reach is set to its identity (gamma 1, a bias 0)."""
    reached = set()
    for name, value in weights.items():
        variable = variables[paths[name]]
        variable.assign(np.reshape(np.asarray(value, np.float32), variable.shape))
        reached.add(paths[name])
    for path, variable in variables.items():
        if path not in reached:
            set_identity(path, variable)


def set_identity(path: str, variable) -> None:
    leaf = path.rsplit("/", 1)[-1]
    if leaf not in ("gamma", "beta", "bias"):
        raise ValueError(f"{path} {tuple(variable.shape)} has no canonical name and no identity value")
    variable.assign(np.full(variable.shape, 1.0 if leaf == "gamma" else 0.0, np.float32))


# -- the model ----------------------------------------------------------------------------------------


def initializer(seed: int):
    return keras.initializers.GlorotUniform(seed=seed)


class Transformer(keras.Model):
    """§3: embeddings x sqrt(d_model) + PE, N keras-hub encoder and decoder layers (post-norm, ReLU), the output
    projection through the target table (``ReversibleEmbedding(reverse=True)``) or its own matrix."""

    def __init__(self, c: ModelConfig, seed: int):
        super().__init__(name="transformer")
        self.c = c
        self.tables = self.make_tables(c, seed)
        self.positions = keras_hub.layers.SinePositionEncoding(name="positions")
        self.embedding_dropout = keras.layers.Dropout(c.dropout, seed=seed)
        sizes = dict(intermediate_dim=c.d_ff, num_heads=c.h, dropout=c.dropout, activation="relu",
                     layer_norm_epsilon=c.eps, normalize_first=False)
        self.encoder_layers = [keras_hub.layers.TransformerEncoder(
            **sizes, kernel_initializer=initializer(seed + 1 + layer), name=f"encoder_{layer}") for layer in range(c.N)]
        self.decoder_layers = [keras_hub.layers.TransformerDecoder(
            **sizes, kernel_initializer=initializer(seed + 1 + c.N + layer), name=f"decoder_{layer}")
            for layer in range(c.N)]
        self.build_layers()

    @staticmethod
    def make_tables(c: ModelConfig, seed: int) -> dict:
        """{"src", "tgt"}: the embeddings; the target's (``ReversibleEmbedding``) also gives the logits."""
        init = keras.initializers.RandomNormal(stddev=c.d_model**-0.5, seed=seed)
        if c.share_embeddings:
            shared = keras_hub.layers.ReversibleEmbedding(c.src_vocab, c.d_model, tie_weights=c.tie_output,
                                                          embeddings_initializer=init, name="embedding")
            return {"src": shared, "tgt": shared}
        return {"src": keras.layers.Embedding(c.src_vocab, c.d_model, embeddings_initializer=init,
                                              name="source_embedding"),
                "tgt": keras_hub.layers.ReversibleEmbedding(c.tgt_vocab, c.d_model, tie_weights=c.tie_output,
                                                            embeddings_initializer=init, name="target_embedding")}

    def build_layers(self) -> None:
        d = self.c.d_model
        for table in self.tables.values():
            if not table.built:  # keras' Embedding builds itself when given its sizes
                table.build((None, None))
        for layer in self.encoder_layers:
            layer.build((None, None, d))
        for layer in self.decoder_layers:
            layer.build((None, None, d), (None, None, d))
        self.built = True

    def embed(self, table, ids, training):
        x = table(ids) * ops.cast(math.sqrt(self.c.d_model), "float32")
        return self.embedding_dropout(x + self.positions(x), training=training)

    def encode(self, src, training=False):
        keep = ops.not_equal(src, self.c.pad_id)
        x = self.embed(self.tables["src"], src, training)
        for layer in self.encoder_layers:
            x = layer(x, padding_mask=keep, training=training)
        return x

    def decode(self, tgt_in, memory, src, training=False):
        y = self.embed(self.tables["tgt"], tgt_in, training)
        for layer in self.decoder_layers:  # each applies the causal mask itself (use_causal_mask=True)
            y = layer(y, memory, decoder_padding_mask=ops.not_equal(tgt_in, self.c.pad_id),
                      encoder_padding_mask=ops.not_equal(src, self.c.pad_id), training=training)
        return self.tables["tgt"](y, reverse=True)

    def call(self, src, tgt_in, training=False):
        return self.decode(tgt_in, self.encode(src, training), src, training)

    def attention_layers(self) -> dict:
        """The MultiHeadAttention layers inside keras-hub's layers, by the protocol's sublayer names."""
        found = {f"encoder.{i}.self_attn": layer._self_attention_layer for i, layer in enumerate(self.encoder_layers)}
        for i, layer in enumerate(self.decoder_layers):
            found[f"decoder.{i}.self_attn"] = layer._self_attention_layer
            found[f"decoder.{i}.cross_attn"] = layer._cross_attention_layer
        return found

    def canonical_paths(self) -> dict[str, str]:
        """Every canonical name of this configuration -> its variable's path."""
        paths = {"E": "embedding/embeddings", "E_src": "source_embedding/embeddings",
                 "E_tgt": "target_embedding/embeddings", "W_out": f"{self.tables['tgt'].name}/reverse_embeddings"}
        for name in model_shapes(self.c):
            if name.startswith(("encoder.", "decoder.")):
                stack, layer, rest = name.split(".", 2)
                paths[name] = f"{stack}_{layer}/{layer_path(stack, rest)}"
        return {name: paths[name] for name in model_shapes(self.c)}


@contextmanager
def recording(attention_layers: dict, found: dict):
    """Each MultiHeadAttention returns its weights while inside (keras' ``return_attention_scores``), kept in
    ``found`` by sublayer name."""

    def recorder(name, compute):
        def compute_and_keep(query, key, value, attention_mask=None, training=None, return_attention_scores=False,
                             **rest):  # keras passes these by position, keras-hub by keyword
            output, scores = compute(query, key, value, attention_mask=attention_mask, training=training,
                                     return_attention_scores=True, **rest)
            found[name] = to_numpy(scores)
            return output, scores

        return compute_and_keep

    for name, layer in attention_layers.items():
        object.__setattr__(layer, "_compute_attention", recorder(name, layer._compute_attention))
    try:
        yield found
    finally:
        for layer in attention_layers.values():
            object.__delattr__(layer, "_compute_attention")


class KerasHubModel:
    """The protocol's Model over ``Transformer``: numpy in and out, weights by canonical name."""

    def __init__(self, config: dict, seed: int):
        self.c = ModelConfig.from_dict(config)
        self.net = Transformer(self.c, seed)
        self.paths = self.net.canonical_paths()

    def load_weights(self, weights: dict[str, np.ndarray]) -> None:
        assign(variables_by_path(self.net), self.paths, weights)

    def dump_weights(self) -> dict[str, np.ndarray]:
        variables = variables_by_path(self.net)
        return {name: to_numpy(variables[self.paths[name]]).reshape(shape)
                for name, shape in model_shapes(self.c).items()}

    def unmapped_parameters(self) -> dict[str, int]:
        mapped = set(self.paths.values())
        return {v.path: int(np.prod(v.shape)) for v in self.net.weights if v.path not in mapped}

    def encode(self, src: np.ndarray) -> np.ndarray:
        return to_numpy(self.net.encode(src))

    def decode(self, tgt_in: np.ndarray, memory: np.ndarray, src: np.ndarray) -> np.ndarray:
        return to_numpy(self.net.decode(tgt_in, memory, src))

    def forward(self, src: np.ndarray, tgt_in: np.ndarray) -> np.ndarray:
        return to_numpy(self.net(src, tgt_in))

    def greedy_decode(self, src: np.ndarray, max_len: int) -> np.ndarray:
        """The argmax at each position, written into a target of ``max_len`` + 1 columns (``<s>``, then padding)
        until every row has ``</s>``; rows that ended are padded. One width for every step, as keras-hub's samplers
        keep their prompt: the causal mask hides the columns not yet written, and JAX compiles each width once.
        keras-hub's samplers drive a cached ``call_with_cache`` its task models define, which these layers alone
        have not: the loop runs ``decode`` on the whole target."""
        memory = self.net.encode(src)
        ys = np.full((src.shape[0], max_len + 1), self.c.pad_id, np.int64)
        ys[:, 0] = self.c.bos_id
        ended = np.zeros(src.shape[0], bool)
        for t in range(max_len):
            token = to_numpy(self.net.decode(ys, memory, src))[:, t].argmax(-1)
            ys[:, t + 1] = np.where(ended, self.c.pad_id, token)
            ended |= token == self.c.eos_id
            if ended.all():
                return ys[:, 1 : t + 2]
        return ys[:, 1:]

    def attention_weights(self, src: np.ndarray, tgt_in: np.ndarray) -> dict[str, np.ndarray]:
        with recording(self.net.attention_layers(), {}) as found:
            self.net(src, tgt_in)
        return found


# -- the adapter --------------------------------------------------------------------------------------


def layer_weights_into(layer, stack: str, weights: dict[str, np.ndarray]) -> None:
    assign(variables_by_path(layer, strip=1), {name: layer_path(stack, name) for name in weights}, weights)


POLICIES = {"float16": "mixed_float16", "bfloat16": "mixed_bfloat16"}  # Keras' mixed precision: float32 variables


class KerasHubAdapter:
    """keras-hub's layers, each built from the weights' sizes and loaded with the canonical weights."""

    model_class = KerasHubModel

    def __init__(self, framework: str):
        self.conventions = Conventions(
            mask="keep", batch_first=True, dtype="float32", framework=framework,
            dtypes=dict.fromkeys(POLICIES, "autocast"),
            supports={"attention_bias": (True,)},
            reasons={"attention_bias": "TransformerEncoder and TransformerDecoder build keras.layers.MultiHeadAttention"
                                      " with its default use_bias=True, and expose no option for it"})

    def with_dtype(self, dtype: str) -> KerasHubAdapter:
        """Keras' mixed precision in ``dtype``: float32 variables, the layers computing in the dtype. The policy is
        the process's (``keras.config.set_dtype_policy``): every layer built after this call follows it."""
        keras.config.set_dtype_policy(POLICIES[dtype])
        switched = copy.copy(self)
        switched.conventions = dataclasses.replace(self.conventions, dtype=dtype, dtypes={})
        return switched

    def positional_encoding(self, n: int, d_model: int) -> np.ndarray:
        return to_numpy(keras_hub.layers.SinePositionEncoding()(ops.zeros((1, n, d_model))))[0]

    def multi_head_attention(self, query, key, value, weights, h, mask):
        d_model = query.shape[-1]
        mha = keras.layers.MultiHeadAttention(num_heads=h, key_dim=d_model // h, name="mha")
        mha.build(query.shape, value.shape, key.shape)
        assign(variables_by_path(mha, strip=1), ATTENTION, weights)
        output, scores = mha(query, value, key=key, attention_mask=mask, return_attention_scores=True)
        return to_numpy(output), to_numpy(scores)

    def encoder_layer(self, x, weights, h, eps, src_mask):
        layer = keras_hub.layers.TransformerEncoder(weights["ffn.W1"].shape[1], h, layer_norm_epsilon=eps,
                                                    name="layer")
        layer.build(x.shape)
        layer_weights_into(layer, "encoder", weights)
        return to_numpy(layer(x, padding_mask=src_mask))

    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask):
        layer = keras_hub.layers.TransformerDecoder(weights["ffn.W1"].shape[1], h, layer_norm_epsilon=eps,
                                                    name="layer")
        layer.build(y.shape, memory.shape)
        layer_weights_into(layer, "decoder", weights)
        return to_numpy(layer(y, memory, decoder_padding_mask=tgt_mask, encoder_padding_mask=src_mask))

    def build_model(self, config: dict, seed: int) -> KerasHubModel:
        return KerasHubModel(config, seed)

    def parameter_count(self, config: dict) -> int:
        return int(sum(np.prod(v.shape) for v in Transformer(ModelConfig.from_dict(config), 0).weights))


def adapter(backend: str) -> KerasHubAdapter:
    check_backend(backend)
    return KerasHubAdapter(framework=f"keras ({backend})")

