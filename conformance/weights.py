"""Canonical weights: one naming of every parameter, in the paper's notation, orientation ``x @ W``.

Every matrix is stored so that a row vector of activations multiplies it from the left, as the paper
writes ``Q = X W_Q`` (§3.2.2) and ``FFN(x) = max(0, x W1 + b1) W2 + b2`` (§3.3). PyTorch's
``nn.Linear.weight`` is the transpose. Names (``l`` counts layers from 0)::

    E                                   (vocab, d_model)  shared source/target embedding and output (§3.4)
    E_src, E_tgt                        instead of E when share_embeddings=False
    W_out                               (d_model, tgt_vocab), only when tie_output=False; no bias
    encoder.{l}.self_attn.{W_Q,W_K,W_V} (d_model, d_model)  columns [i*d_k:(i+1)*d_k] are head i
    encoder.{l}.self_attn.W_O           (d_model, d_model)  rows [i*d_k:(i+1)*d_k] read head i
    encoder.{l}.self_attn.{b_Q,b_K,b_V,b_O}  (d_model,)     only when attention_bias=True
    encoder.{l}.norm1.{gamma,beta}      (d_model,)          LayerNorm after the attention sublayer
    encoder.{l}.ffn.W1 (d_model, d_ff), ffn.b1 (d_ff,), ffn.W2 (d_ff, d_model), ffn.b2 (d_model,)
    encoder.{l}.norm2.{gamma,beta}      (d_model,)          LayerNorm after the FFN sublayer
    decoder.{l}.self_attn.*, decoder.{l}.norm1.*            masked self-attention and its norm
    decoder.{l}.cross_attn.*, decoder.{l}.norm2.*           encoder-decoder attention and its norm
    decoder.{l}.ffn.*, decoder.{l}.norm3.*                  FFN and its norm

A component's weights are the same names with the layer prefix removed: a multi-head attention gets
``{"W_Q", "b_Q", ...}``, an encoder layer ``{"self_attn.W_Q", ..., "norm2.beta"}``.
"""

from __future__ import annotations

import numpy as np

from conformance.config import ModelConfig

ATTENTION_MATRICES = ("W_Q", "W_K", "W_V", "W_O")
ATTENTION_BIASES = ("b_Q", "b_K", "b_V", "b_O")
ENCODER_SUBLAYERS = (("self_attn", "attention"), ("norm1", "norm"), ("ffn", "ffn"), ("norm2", "norm"))
DECODER_SUBLAYERS = (
    ("self_attn", "attention"),
    ("norm1", "norm"),
    ("cross_attn", "attention"),
    ("norm2", "norm"),
    ("ffn", "ffn"),
    ("norm3", "norm"),
)


def attention_shapes(d_model: int, *, bias: bool = True) -> dict[str, tuple[int, ...]]:
    shapes = {name: (d_model, d_model) for name in ATTENTION_MATRICES}
    if bias:
        shapes.update({name: (d_model,) for name in ATTENTION_BIASES})
    return shapes


def ffn_shapes(d_model: int, d_ff: int) -> dict[str, tuple[int, ...]]:
    return {"W1": (d_model, d_ff), "b1": (d_ff,), "W2": (d_ff, d_model), "b2": (d_model,)}


def norm_shapes(d_model: int) -> dict[str, tuple[int, ...]]:
    return {"gamma": (d_model,), "beta": (d_model,)}


def _sublayer_shapes(kind: str, config: ModelConfig) -> dict[str, tuple[int, ...]]:
    if kind == "attention":
        return attention_shapes(config.d_model, bias=config.attention_bias)
    if kind == "ffn":
        return ffn_shapes(config.d_model, config.d_ff)
    return norm_shapes(config.d_model)


def layer_shapes(config: ModelConfig, stack: str) -> dict[str, tuple[int, ...]]:
    """Shapes of one encoder or decoder layer's weights, names without the layer prefix."""
    sublayers = ENCODER_SUBLAYERS if stack == "encoder" else DECODER_SUBLAYERS
    return {
        f"{sub}.{name}": shape
        for sub, kind in sublayers
        for name, shape in _sublayer_shapes(kind, config).items()
    }


def model_shapes(config: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Every canonical parameter of the model with its shape, in a fixed order."""
    shapes: dict[str, tuple[int, ...]] = {}
    if config.share_embeddings:
        shapes["E"] = (config.src_vocab, config.d_model)
    else:
        shapes["E_src"] = (config.src_vocab, config.d_model)
        shapes["E_tgt"] = (config.tgt_vocab, config.d_model)
    if not config.tie_output:
        shapes["W_out"] = (config.d_model, config.tgt_vocab)
    for stack in ("encoder", "decoder"):
        for layer in range(config.N):
            for name, shape in layer_shapes(config, stack).items():
                shapes[f"{stack}.{layer}.{name}"] = shape
    return shapes


def parameter_count(config: ModelConfig) -> int:
    """The number of parameters the canonical naming holds: the lesson's Step 7 count."""
    return int(sum(np.prod(shape) for shape in model_shapes(config).values()))


def random_weights(
    shapes: dict[str, tuple[int, ...]], rng: np.random.Generator, *, dtype=np.float32
) -> dict[str, np.ndarray]:
    """Weights that look trained: gamma far from 1, beta far from 0, every bias non-zero.

    Fresh weights (gamma = 1, beta = 0, zero biases) hide bugs such as an extra final LayerNorm; the
    lesson's "Test with trained weights, not only fresh ones".
    """
    weights = {}
    for name, shape in shapes.items():
        leaf = name.rsplit(".", 1)[-1]
        if leaf == "gamma":
            value = 1.0 + rng.choice([-1.0, 1.0], shape) * rng.uniform(0.3, 0.8, shape)  # [0.2, 0.7] or [1.3, 1.8]
        elif leaf == "beta" or leaf.startswith("b"):
            value = rng.choice([-1.0, 1.0], shape) * rng.uniform(0.1, 0.5, shape)
        else:  # float32 draws: the base model's 63 M weights in about a second
            fan_in = shape[0] if name not in ("E", "E_src", "E_tgt") else shape[1]
            value = rng.standard_normal(shape, dtype=np.float32) / np.float32(np.sqrt(fan_in))
        weights[name] = value.astype(dtype, copy=False)
    return weights


def sub_weights(weights: dict[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    """The weights under ``prefix`` with the prefix removed: ``sub_weights(w, "encoder.0.")``."""
    return {name[len(prefix):]: value for name, value in weights.items() if name.startswith(prefix)}


def sublayer_weights(weights: dict[str, np.ndarray], sublayer: str, norm: str) -> dict[str, np.ndarray]:
    """A layer's weights for one composite sublayer, its norm's as ``norm.gamma``, ``norm.beta``:
    ``sublayer_weights(w, "self_attn", "norm1")`` is {W_Q, ..., b_O, norm.gamma, norm.beta}, what
    ``attention_sublayer`` receives (``ffn_sublayer``: W1, b1, W2, b2, norm.gamma, norm.beta)."""
    return {**sub_weights(weights, f"{sublayer}."),
            **{f"norm.{name}": value for name, value in sub_weights(weights, f"{norm}.").items()}}


def check_names(weights: dict, expected: dict[str, tuple[int, ...]]) -> list[str]:
    """Problems with a weight dict against the expected names and shapes (empty when it conforms)."""
    problems = [f"missing {name} {shape}" for name, shape in expected.items() if name not in weights]
    problems += [f"unexpected {name}" for name in weights if name not in expected]
    problems += [
        f"{name}: shape {tuple(np.shape(weights[name]))}, expected {shape}"
        for name, shape in expected.items()
        if name in weights and tuple(np.shape(weights[name])) != shape
    ]
    return problems
