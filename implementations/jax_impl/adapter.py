"""The adapter of the JAX implementation: every part of ``conformance.adapter.Adapter``.

Float32, batch first, boolean keep masks. Each part builds the module of ``model.py`` it names, loads the
canonical weights it is given, and runs it in evaluation mode; the model trains with ``training.py``.
In half precision (``--dtype float16`` or ``bfloat16``, ``with_dtype``): natively, parameters and activations in
the dtype; the loss in float32; training refused (the paper's recipe has no loss scaling, and its Adam eps of 1e-9
is 0 in float16).
It declares ``arrays="jax"``: the boundary hands it JAX arrays (cast once more by ``floats``, ``ids``, ``keep``,
which take NumPy arrays too) and takes the JAX arrays it returns.
Load it as the built-in ``jax`` (``conformance.implementations.jax_impl.adapter:adapter``).
"""

from __future__ import annotations

import copy
import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from conformance.adapter import Conventions
from conformance.config import ModelConfig
from conformance.implementations.jax_impl.model import (
    DecoderLayer,
    EncoderLayer,
    FeedForward,
    MultiHeadAttention,
    Transformer,
    apply,
    attention_weights,
    decode,
    encode,
    greedy_decode,
    layer_norm,
    load_canonical,
    parameters,
    scaled_dot_product_attention,
    sinusoids,
)
from conformance.implementations.jax_impl.training import Trainer, paper_schedule, smoothed_loss
from conformance.weights import model_shapes

# --------------------------------------------------------------------------------------------------
# Crossing the boundary
# --------------------------------------------------------------------------------------------------


def floats(x, dtype=jnp.float32) -> jax.Array:
    """A NumPy or JAX array -> ``dtype``: float32, the adapter's half dtype, or float32 for the loss whatever the
    adapter's (float64 inputs are cast too: this implementation never computes in float64)."""
    return jnp.asarray(x, dtype=dtype)


def ids(x) -> jax.Array:
    """Token ids -> int32, JAX's integer type while 64-bit mode is off (the cast is explicit, not a warning)."""
    return jnp.asarray(x, dtype=jnp.int32)


def keep(mask) -> jax.Array | None:
    return None if mask is None else jnp.asarray(mask, dtype=bool)


def key_padding(mask) -> jax.Array | None:
    """(B, L) keep -> (B, 1, L): one row shared by every query."""
    return None if mask is None else keep(mask)[:, None, :]


def with_weights(module: nnx.Module, weights: dict) -> nnx.Module:
    """A freshly built component with its canonical weights loaded (built in evaluation mode)."""
    load_canonical(module, weights)
    return module


def built(cls, *args, **kwargs) -> nnx.Module:
    """A component whose initial weights do not matter: they are replaced before it runs."""
    return cls(*args, **kwargs, rngs=nnx.Rngs(0))


HALF_TRAINING = ("the paper's recipe on {dtype} weights: Adam's eps 1e-9 is 0 in float16, and updates of 1e-7 x the"
                 " rate vanish against half-precision weights; this implementation trains in float32 only")


# --------------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------------


class JaxModel:
    """A ``conformance.adapter.Model``: the ``Transformer`` module, its own greedy loop and its own trainer."""

    def __init__(self, config: ModelConfig, seed: int, dtype=jnp.float32):
        self.config, self.dtype = config, dtype
        self.module = Transformer(config, dtype=dtype, rngs=nnx.Rngs(seed))  # parameters and dropout keys from the seed
        self.trainer: Trainer | None = None  # the optimiser's state is made at the first update

    def load_weights(self, weights: dict) -> None:
        load_canonical(self.module, weights)

    def dump_weights(self) -> dict:
        params = parameters(self.module)
        return {name: params[name][...] for name in model_shapes(self.config)}  # canonical order

    def forward(self, src, tgt_in):
        return apply(self.module, ids(src), ids(tgt_in))

    def encode(self, src):
        return encode(self.module, ids(src))

    def decode(self, tgt_in, memory, src):
        return decode(self.module, ids(tgt_in), floats(memory, self.dtype), ids(src))

    def greedy_decode(self, src, max_len: int):
        return greedy_decode(self.module, ids(src), int(max_len))

    def attention_weights(self, src, tgt_in) -> dict:
        return attention_weights(self.module, ids(src), ids(tgt_in))

    def unmapped_parameters(self) -> dict[str, int]:
        """Every parameter maps to a canonical name (the modules carry the paper's names)."""
        canonical = model_shapes(self.config)
        return {name: int(p.size) for name, p in parameters(self.module).items() if name not in canonical}

    def train_step(self, src, tgt_in, tgt_out) -> dict:
        if self.dtype != jnp.float32:
            raise NotImplementedError(HALF_TRAINING.format(dtype=jnp.dtype(self.dtype).name))
        if self.trainer is None:
            self.trainer = Trainer(self.module)
        return self.trainer.step(ids(src), ids(tgt_in), ids(tgt_out))


# --------------------------------------------------------------------------------------------------
# The adapter
# --------------------------------------------------------------------------------------------------


def uses_bias(weights: dict, prefix: str = "") -> bool:
    return f"{prefix}b_Q" in weights


class JaxAdapter:
    """Every part of the protocol, computed by the modules and functions of ``model.py`` and ``training.py``."""

    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="jax", arrays="jax",
                              dtypes={"float16": "native", "bfloat16": "native"})
    model_class = JaxModel
    dtype = jnp.float32  # what it computes in; an instance attribute only on a with_dtype copy

    def with_dtype(self, dtype: str) -> JaxAdapter:
        """This adapter computing in ``dtype`` (float16 or bfloat16, declared; or float32): every module it builds
        holds its parameters and computes in it."""
        if dtype not in ("float16", "bfloat16", "float32"):
            raise ValueError(f"the JAX implementation computes in float16, bfloat16 or float32, not {dtype!r}")
        switched = copy.copy(self)
        switched.dtype = jnp.dtype(dtype).type
        switched.conventions = dataclasses.replace(self.conventions, dtype=dtype, dtypes={})
        return switched

    def floats(self, x) -> jax.Array:
        return floats(x, self.dtype)

    # §3.5
    def positional_encoding(self, n: int, d_model: int):
        return sinusoids(int(n), int(d_model), self.dtype)

    # §3.1
    def layer_norm(self, x, gamma, beta, eps: float):
        norm = layer_norm(np.shape(gamma)[0], float(eps), nnx.Rngs(0), self.dtype)
        norm.scale[...], norm.bias[...] = self.floats(gamma), self.floats(beta)  # Flax's names for gamma and beta
        return apply(norm, self.floats(x))

    # §3.2.1
    def scaled_dot_product_attention(self, q, k, v, mask):
        return scaled_dot_product_attention(self.floats(q), self.floats(k), self.floats(v), keep(mask))

    # §3.2.2
    def multi_head_attention(self, query, key, value, weights: dict, h: int, mask):
        d_model = np.shape(weights["W_Q"])[0]
        mha = built(MultiHeadAttention, d_model, int(h), use_bias=uses_bias(weights), dtype=self.dtype)
        mha = with_weights(mha, weights)
        return apply(mha, self.floats(query), self.floats(key), self.floats(value), keep(mask))

    # §3.3
    def feed_forward(self, x, weights: dict):
        ffn = with_weights(built(FeedForward, *np.shape(weights["W1"]), dtype=self.dtype), weights)
        return apply(ffn, self.floats(x))

    def _layer(self, cls, weights: dict, h: int, eps: float) -> nnx.Module:
        d_model, d_ff = np.shape(weights["ffn.W1"])
        layer = built(cls, d_model, int(h), d_ff, eps=float(eps), dropout=0.0,
                      use_bias=uses_bias(weights, "self_attn."), dtype=self.dtype)
        return with_weights(layer, weights)

    # §3.1, encoder
    def encoder_layer(self, x, weights: dict, h: int, eps: float, src_mask):
        out, _ = apply(self._layer(EncoderLayer, weights, h, eps), self.floats(x), key_padding(src_mask))
        return out

    # §3.1, decoder; the layer adds the causal mask itself
    def decoder_layer(self, y, memory, weights: dict, h: int, eps: float, tgt_mask, src_mask):
        layer = self._layer(DecoderLayer, weights, h, eps)
        out, _ = apply(layer, self.floats(y), self.floats(memory), key_padding(tgt_mask), key_padding(src_mask))
        return out

    def build_model(self, config: dict, seed: int) -> JaxModel:
        return JaxModel(ModelConfig.from_dict(config), int(seed), self.dtype)

    # §5.3: the optax schedule the trainer uses, at update number step (from 1)
    def learning_rate(self, step: int, d_model: int, warmup: int) -> float:
        return float(paper_schedule(int(d_model), int(warmup))(int(step) - 1))

    # §5.4, in float32 whatever the dtype of the logits: a log-softmax summed in half precision is the loss of
    # another model
    def label_smoothed_loss(self, logits, targets, epsilon: float, pad_id: int) -> float:
        return float(smoothed_loss(floats(logits), ids(targets), float(epsilon), int(pad_id)))

    def parameter_count(self, config: dict) -> int:
        """Counted on the shapes alone: ``nnx.eval_shape`` builds the model without allocating it."""
        abstract = nnx.eval_shape(lambda: Transformer(ModelConfig.from_dict(config), rngs=nnx.Rngs(0)))
        return sum(math.prod(p.shape) for p in parameters(abstract).values())


adapter = JaxAdapter()
