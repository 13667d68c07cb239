"""The encoder-decoder of Vaswani et al. (2017), §3, as Flax NNX modules in float32 (or a half dtype).

Conventions fixed here:

* Masks are boolean *keep* masks (True = this query may attend to this key), broadcast against the scores.
  Padding hides keys only; a query whose keys are all hidden gets weights 0 and output 0, never NaN.
* Parameters are Flax's own (``nnx.Linear`` kernel (in, out), ``nnx.Embed`` embedding (vocab, d_model),
  ``nnx.LayerNorm`` scale and bias); the module attributes carry the paper's names, so that
  ``canonical_name`` reads the canonical name of ``conformance.weights`` off a parameter's path
  (``encoder/0/self_attn/W_Q/kernel`` is ``encoder.0.self_attn.W_Q``, its bias ``b_Q``). Flax's kernel is
  already in the orientation ``x @ W``.
* Dropout sits where §5.4 puts it: on each sublayer's output before the residual, and on the sum of the
  embeddings and the positional encodings. Modules are built in evaluation mode (dropout off);
  ``Module.train()`` turns it on.
* Every module returns its attention weights beside its output, by sublayer name, so that the model can
  report them (``attention_weights``) without keeping state between calls.
* Every module takes ``dtype``, its parameters' and its computation's (Flax's ``param_dtype`` and ``dtype``):
  float32 by default, float16 or bfloat16 to serve in half precision. Three steps stay wider than the dtype, as
  careful half-precision code keeps them: the positional table (float64, then rounded), the softmax and the
  LayerNorm statistics (float32; Flax's LayerNorm promotes its statistics itself); and the scores are scaled
  before their matmul, not after it, so that float16 never holds an unscaled dot product beyond its 65,504.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from conformance.config import ModelConfig

XAVIER = nnx.initializers.xavier_uniform()

# --------------------------------------------------------------------------------------------------
# The formulas
# --------------------------------------------------------------------------------------------------


# §3.5: PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)).
def sinusoids(n: int, d_model: int, dtype=jnp.float32) -> jax.Array:
    """Positions 0..n-1 -> (n, d_model) in ``dtype``, sine in the even columns and cosine in the odd ones.

    A constant table, built in NumPy float64 (as Flax's WMT example builds it) so that far positions keep
    their precision (float16 holds integers exactly only up to 2,048), then rounded to ``dtype``."""
    position = np.arange(n, dtype=np.float64)[:, None]  # (n, 1)
    frequency = np.exp(-math.log(10000.0) * np.arange(0, d_model, 2) / d_model)  # (d_model/2,)
    angle = position * frequency  # (n, d_model/2)
    table = np.stack([np.sin(angle), np.cos(angle)], axis=-1).reshape(n, d_model)  # interleaved pairs
    return jnp.asarray(table, dtype=dtype)


# §3.2.1: Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V, hidden keys at -inf before the softmax.
def scaled_dot_product_attention(q, k, v, keep=None) -> tuple[jax.Array, jax.Array]:
    """q (..., Lq, d_k), k (..., Lk, d_k), v (..., Lk, d_v), keep broadcastable to (..., Lq, Lk) or None
    -> (output (..., Lq, d_v), weights (..., Lq, Lk))."""
    q = q / math.sqrt(q.shape[-1])  # scaled first: Q K^T itself may not fit in a half dtype
    scores = jnp.einsum("...qd,...kd->...qk", q, k).astype(jnp.float32)  # (..., Lq, Lk); the softmax in float32
    if keep is None:
        weights = jax.nn.softmax(scores, axis=-1)
    else:
        has_key = keep.any(axis=-1, keepdims=True)  # False for a row whose keys are all hidden
        scores = jnp.where(keep, scores, -jnp.inf)
        scores = jnp.where(has_key, scores, 0.0)  # such a row stays finite (and its gradient too) ...
        weights = jnp.where(has_key, jax.nn.softmax(scores, axis=-1), 0.0)  # ... and gets weights 0
    weights = weights.astype(v.dtype)
    return jnp.einsum("...qk,...kd->...qd", weights, v), weights


# §3.2.3: position t reads positions 0..t; the diagonal stays visible.
def causal_keep(T: int) -> jax.Array:
    """(T, T) bool, True on and below the diagonal."""
    return jnp.tril(jnp.ones((T, T), dtype=bool))


def padding_keep(ids: jax.Array, pad_id: int) -> jax.Array:
    """ids (B, L) -> (B, 1, L) bool: True for real tokens, one row shared by every query."""
    return (ids != pad_id)[:, None, :]


# --------------------------------------------------------------------------------------------------
# The modules
# --------------------------------------------------------------------------------------------------


def linear(d_in: int, d_out: int, *, use_bias: bool = True, dtype=jnp.float32, rngs: nnx.Rngs) -> nnx.Linear:
    """x @ W + b, W Xavier-uniform and b 0."""
    return nnx.Linear(d_in, d_out, use_bias=use_bias, kernel_init=XAVIER, dtype=dtype, param_dtype=dtype, rngs=rngs)


def layer_norm(d_model: int, eps: float, rngs: nnx.Rngs, dtype=jnp.float32) -> nnx.LayerNorm:
    """§3.1 (Ba et al.): gamma (x - mu) / sqrt(sigma^2 + eps) + beta over the last axis. The variance is
    E[(x - mu)^2], not Flax's default E[x^2] - mu^2, which loses digits in float32 when |mu| >> sigma."""
    return nnx.LayerNorm(d_model, epsilon=eps, use_fast_variance=False, dtype=dtype, param_dtype=dtype, rngs=rngs)


class MultiHeadAttention(nnx.Module):
    """§3.2.2: MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W_O, head_i = Attention(Q W_Q^i, K W_K^i, V W_V^i).

    Head i reads columns [i*d_k:(i+1)*d_k] of each projection; the biases exist when ``use_bias``."""

    def __init__(self, d_model: int, h: int, *, use_bias: bool = True, dtype=jnp.float32, rngs: nnx.Rngs):
        self.h = h
        self.W_Q = linear(d_model, d_model, use_bias=use_bias, dtype=dtype, rngs=rngs)
        self.W_K = linear(d_model, d_model, use_bias=use_bias, dtype=dtype, rngs=rngs)
        self.W_V = linear(d_model, d_model, use_bias=use_bias, dtype=dtype, rngs=rngs)
        self.W_O = linear(d_model, d_model, use_bias=use_bias, dtype=dtype, rngs=rngs)

    def split_heads(self, x: jax.Array) -> jax.Array:
        """(B, L, d_model) -> (B, h, L, d_k)."""
        B, L, d_model = x.shape
        return x.reshape(B, L, self.h, d_model // self.h).transpose(0, 2, 1, 3)

    def __call__(self, query, key, value, keep=None) -> tuple[jax.Array, jax.Array]:
        """query (B, Lq, d_model), key and value (B, Lk, d_model), keep broadcastable to (B, Lq, Lk)
        -> (output (B, Lq, d_model), weights (B, h, Lq, Lk))."""
        Q = self.split_heads(self.W_Q(query))  # (B, h, Lq, d_k)
        K = self.split_heads(self.W_K(key))  # (B, h, Lk, d_k)
        V = self.split_heads(self.W_V(value))  # (B, h, Lk, d_k)
        heads, weights = scaled_dot_product_attention(Q, K, V, None if keep is None else keep[:, None])
        B, h, Lq, d_k = heads.shape
        concat = heads.transpose(0, 2, 1, 3).reshape(B, Lq, h * d_k)  # (B, Lq, d_model)
        return self.W_O(concat), weights


class FeedForward(nnx.Module):
    """§3.3: FFN(x) = max(0, x W1 + b1) W2 + b2, at each position alone."""

    def __init__(self, d_model: int, d_ff: int, *, dtype=jnp.float32, rngs: nnx.Rngs):
        self.W1 = linear(d_model, d_ff, dtype=dtype, rngs=rngs)
        self.W2 = linear(d_ff, d_model, dtype=dtype, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.W2(jax.nn.relu(self.W1(x)))  # (B, L, d_ff) -> (B, L, d_model)


class EncoderLayer(nnx.Module):
    """§3.1: self-attention, then the FFN, each as LayerNorm(x + Dropout(Sublayer(x)))."""

    def __init__(self, d_model: int, h: int, d_ff: int, *, eps: float, dropout: float, use_bias: bool,
                 dtype=jnp.float32, rngs: nnx.Rngs):
        self.self_attn = MultiHeadAttention(d_model, h, use_bias=use_bias, dtype=dtype, rngs=rngs)
        self.norm1 = layer_norm(d_model, eps, rngs, dtype)
        self.ffn = FeedForward(d_model, d_ff, dtype=dtype, rngs=rngs)
        self.norm2 = layer_norm(d_model, eps, rngs, dtype)
        self.dropout = nnx.Dropout(dropout, deterministic=True, rngs=rngs)

    def __call__(self, x, src_keep) -> tuple[jax.Array, dict]:
        """x (B, S, d_model), src_keep (B, 1, S) -> (B, S, d_model), {"self_attn": (B, h, S, S)}."""
        attended, weights = self.self_attn(x, x, x, src_keep)
        x = self.norm1(x + self.dropout(attended))
        return self.norm2(x + self.dropout(self.ffn(x))), {"self_attn": weights}


class DecoderLayer(nnx.Module):
    """§3.1: masked self-attention, encoder-decoder attention, FFN; each post-norm."""

    def __init__(self, d_model: int, h: int, d_ff: int, *, eps: float, dropout: float, use_bias: bool,
                 dtype=jnp.float32, rngs: nnx.Rngs):
        self.self_attn = MultiHeadAttention(d_model, h, use_bias=use_bias, dtype=dtype, rngs=rngs)
        self.norm1 = layer_norm(d_model, eps, rngs, dtype)
        self.cross_attn = MultiHeadAttention(d_model, h, use_bias=use_bias, dtype=dtype, rngs=rngs)
        self.norm2 = layer_norm(d_model, eps, rngs, dtype)
        self.ffn = FeedForward(d_model, d_ff, dtype=dtype, rngs=rngs)
        self.norm3 = layer_norm(d_model, eps, rngs, dtype)
        self.dropout = nnx.Dropout(dropout, deterministic=True, rngs=rngs)

    def __call__(self, y, memory, tgt_keep, src_keep) -> tuple[jax.Array, dict]:
        """y (B, T, d_model), memory (B, S, d_model), tgt_keep (B, 1, T), src_keep (B, 1, S)
        -> (B, T, d_model), {"self_attn": (B, h, T, T), "cross_attn": (B, h, T, S)}."""
        self_keep = causal_keep(y.shape[1])[None] & tgt_keep  # (B, T, T): not the future, not padding
        attended, self_weights = self.self_attn(y, y, y, self_keep)
        y = self.norm1(y + self.dropout(attended))
        # Queries from the decoder, keys and values from the memory.
        attended, cross_weights = self.cross_attn(y, memory, memory, src_keep)
        y = self.norm2(y + self.dropout(attended))
        y = self.norm3(y + self.dropout(self.ffn(y)))
        return y, {"self_attn": self_weights, "cross_attn": cross_weights}


class Transformer(nnx.Module):
    """The model of a ``ModelConfig``: embeddings E (or E_src and E_tgt), N encoder and N decoder layers, and
    the output y E^T (or y W_out), no bias. Built in evaluation mode, its parameters in ``dtype``."""

    def __init__(self, config: ModelConfig, *, dtype=jnp.float32, rngs: nnx.Rngs):
        self.config, self.dtype = config, dtype
        d = config.d_model
        embed = dict(embedding_init=nnx.initializers.normal(stddev=d**-0.5), dtype=dtype, param_dtype=dtype, rngs=rngs)
        if config.share_embeddings:
            self.E = nnx.Embed(config.src_vocab, d, **embed)
        else:
            self.E_src = nnx.Embed(config.src_vocab, d, **embed)
            self.E_tgt = nnx.Embed(config.tgt_vocab, d, **embed)
        if not config.tie_output:
            self.W_out = linear(d, config.tgt_vocab, use_bias=False, dtype=dtype, rngs=rngs)
        sizes = dict(eps=config.eps, dropout=config.dropout, use_bias=config.attention_bias, dtype=dtype, rngs=rngs)
        self.encoder = nnx.List([EncoderLayer(d, config.h, config.d_ff, **sizes) for _ in range(config.N)])
        self.decoder = nnx.List([DecoderLayer(d, config.h, config.d_ff, **sizes) for _ in range(config.N)])
        self.dropout = nnx.Dropout(config.dropout, deterministic=True, rngs=rngs)

    @property
    def src_embedding(self) -> nnx.Embed:
        return self.E if self.config.share_embeddings else self.E_src

    @property
    def tgt_embedding(self) -> nnx.Embed:
        return self.E if self.config.share_embeddings else self.E_tgt

    # §3.4, §3.5: Dropout(sqrt(d_model) E[token] + PE(pos)), positions from 0.
    def embed(self, ids: jax.Array, table: nnx.Embed) -> jax.Array:
        """ids (B, L) -> (B, L, d_model)."""
        d_model = self.config.d_model
        return self.dropout(table(ids) * math.sqrt(d_model) + sinusoids(ids.shape[1], d_model, self.dtype))

    def encode_with_weights(self, src: jax.Array) -> tuple[jax.Array, dict]:
        """src (B, S) -> memory (B, S, d_model), {"encoder.{l}.self_attn": (B, h, S, S)}."""
        src_keep = padding_keep(src, self.config.pad_id)
        x, attention = self.embed(src, self.src_embedding), {}
        for i, layer in enumerate(self.encoder):
            x, weights = layer(x, src_keep)
            attention.update({f"encoder.{i}.{name}": w for name, w in weights.items()})
        return x, attention

    def decode_with_weights(self, tgt_in, memory, src) -> tuple[jax.Array, dict]:
        """tgt_in (B, T), memory (B, S, d_model), src (B, S) -> logits (B, T, tgt_vocab),
        {"decoder.{l}.self_attn": (B, h, T, T), "decoder.{l}.cross_attn": (B, h, T, S)}."""
        pad = self.config.pad_id
        tgt_keep, src_keep = padding_keep(tgt_in, pad), padding_keep(src, pad)
        y, attention = self.embed(tgt_in, self.tgt_embedding), {}
        for i, layer in enumerate(self.decoder):
            y, weights = layer(y, memory, tgt_keep, src_keep)
            attention.update({f"decoder.{i}.{name}": w for name, w in weights.items()})
        return self.project_output(y), attention

    # §3.4: the pre-softmax linear transformation shares its matrix with the target embedding.
    def project_output(self, y: jax.Array) -> jax.Array:
        """y (B, T, d_model) -> logits (B, T, tgt_vocab): y E^T when tied, y W_out otherwise; no bias."""
        return self.tgt_embedding.attend(y) if self.config.tie_output else self.W_out(y)

    def encode(self, src):
        return self.encode_with_weights(src)[0]

    def decode(self, tgt_in, memory, src):
        return self.decode_with_weights(tgt_in, memory, src)[0]

    def __call__(self, src, tgt_in) -> jax.Array:
        """src (B, S), tgt_in (B, T) -> logits (B, T, tgt_vocab), before the softmax."""
        return self.decode(tgt_in, self.encode(src), src)


# --------------------------------------------------------------------------------------------------
# Evaluation, compiled: one XLA program per module and shapes (run op by op, JAX compiles every operation
# anew for each new shape, which costs more than compiling the whole call once)
# --------------------------------------------------------------------------------------------------


@nnx.jit
def apply(module: nnx.Module, *args):
    """``module(*args)``."""
    return module(*args)


@nnx.jit
def encode(model: Transformer, src: jax.Array) -> jax.Array:
    return model.encode(src)


@nnx.jit
def decode(model: Transformer, tgt_in: jax.Array, memory: jax.Array, src: jax.Array) -> jax.Array:
    return model.decode(tgt_in, memory, src)


@nnx.jit
def attention_weights(model: Transformer, src: jax.Array, tgt_in: jax.Array) -> dict:
    """Every sublayer's (B, h, Lq, Lk) weights in a forward pass on (src, tgt_in), by canonical prefix."""
    memory, attention = model.encode_with_weights(src)
    _, cross = model.decode_with_weights(tgt_in, memory, src)
    return {**attention, **cross}


# The lesson's greedy decoding: encode once, start from <s>, append the argmax, stop at </s>.
def greedy_decode(model: Transformer, src: jax.Array, max_len: int) -> jax.Array:
    """src (B, S) -> (B, L) ids after <s>, L <= max_len; padding after each row's </s>."""
    cfg = model.config
    memory = encode(model, src)  # (B, S, d_model): the encoder runs once
    ys = jnp.full((src.shape[0], 1), cfg.bos_id, dtype=jnp.int32)  # (B, 1)
    finished = jnp.zeros(src.shape[0], dtype=bool)
    for _ in range(max_len):
        choice = decode(model, ys, memory, src)[:, -1].argmax(-1).astype(jnp.int32)  # (B,): the last position's
        choice = jnp.where(finished, cfg.pad_id, choice)  # rows already done get padding
        ys = jnp.concatenate([ys, choice[:, None]], axis=1)
        finished = finished | (choice == cfg.eos_id)
        if bool(finished.all()):
            break
    return ys[:, 1:]  # without <s>


# --------------------------------------------------------------------------------------------------
# Canonical names (conformance.weights)
# --------------------------------------------------------------------------------------------------

NORM_LEAVES = {"scale": "gamma", "bias": "beta"}


def canonical_name(path: tuple) -> str:
    """A parameter's path in a module -> its canonical name: ``("encoder", 0, "self_attn", "W_Q", "kernel")``
    is ``encoder.0.self_attn.W_Q``, its ``bias`` ``encoder.0.self_attn.b_Q``; ``("norm1", "scale")`` is
    ``norm1.gamma``; ``("E", "embedding")`` is ``E``."""
    *owner, leaf = (str(part) for part in path)
    *prefix, module = owner
    if leaf in ("kernel", "embedding"):  # a matrix carries its module's name: W_Q, W1, W_out, E
        return ".".join(owner)
    if module.startswith("norm"):
        return ".".join([*owner, NORM_LEAVES[leaf]])
    return ".".join([*prefix, "b" + module[1:]])  # the bias of W_Q is b_Q, of W1 b1


def parameters(module: nnx.Module) -> dict[str, nnx.Param]:
    """Every parameter of ``module`` by canonical name (names relative to ``module``)."""
    return {canonical_name(path): variable for path, variable in nnx.iter_graph(module)
            if isinstance(variable, nnx.Param)}


def load_canonical(module: nnx.Module, weights: dict) -> None:
    """Set every parameter of ``module`` from canonical ``weights``; the names and shapes must match exactly."""
    params = parameters(module)
    missing = sorted(set(params) - set(weights))
    unexpected = sorted(set(weights) - set(params))
    if missing or unexpected:
        raise KeyError(f"canonical weights do not match: missing {missing}, unexpected {unexpected}")
    values = {name: jnp.asarray(weights[name], dtype=p[...].dtype) for name, p in params.items()}  # the module's dtype
    wrong = [f"{name}: shape {values[name].shape}, expected {p.shape}" for name, p in params.items()
             if values[name].shape != p.shape]
    if wrong:
        raise ValueError("; ".join(wrong))
    for name, p in params.items():
        p[...] = values[name]
