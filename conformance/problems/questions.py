"""The questions the layer and model checks ask, each a function of (candidate, sizes).

A check computes its candidate's answer with one of these, and hands the same function to the diagnosis
(``Question(answer, sizes)``): the catalogue's mutants are then asked exactly the same thing, on the same
inputs (every input derives from ``sizes``, its seed included), and again on a second, bigger problem
(``diagnosis.probe_of``). Inputs follow ``conformance.problems.scenarios``: weights that look trained, padded
batches, a start token in the decoder input.
"""

from __future__ import annotations

import copy
import functools

import numpy as np

from conformance.problems import oracle
from conformance.problems.scenarios import (
    LayerSizes,
    ModelSizes,
    activations,
    key_padding,
    layer_weights,
    loaded_model,
    model_weights,
    source_and_target,
    trailing_keep,
)
from conformance.weights import attention_shapes, ffn_shapes, random_weights

# --------------------------------------------------------------------------------------------------
# Problems, drawn once per sizes
# --------------------------------------------------------------------------------------------------
# A problem is a function of its sizes alone (every draw comes from sizes.seed), and the diagnosis asks the
# same one of every mutant of the catalogue (77 models' weights drawn again, a base-size model's 5 M among
# them). So each is drawn once and kept; every caller gets its own deep copy, which it may change at will.
PROBLEMS_KEPT = 32


def _drawn_once(draw):
    kept = functools.lru_cache(maxsize=PROBLEMS_KEPT)(draw)

    @functools.wraps(draw)
    def problem(sizes, **options):
        try:
            found = kept(sizes, **options)
        except TypeError:  # sizes that cannot be a key: drawn every time
            return draw(sizes, **options)
        return copy.deepcopy(found)  # arrays copied, an alias kept an alias (self-attention's key is its query)

    return problem


# --------------------------------------------------------------------------------------------------
# Layers
# --------------------------------------------------------------------------------------------------


def positional_encoding_table(candidate, size: tuple[int, int]) -> np.ndarray:
    """PE(n, d_model) for ``size`` = (n, d_model): what every positional-encoding check asks."""
    return candidate.positional_encoding(*size)


@_drawn_once
def encoder_layer_problem(sizes: LayerSizes):
    """Weights, x (B, S, d_model) and a trailing source padding mask (B, S)."""
    rng = sizes.rng()
    weights = layer_weights(sizes, "encoder", rng)
    return weights, activations(rng, sizes.B, sizes.S, sizes.d_model), trailing_keep(rng, sizes.B, sizes.S)


def encoder_layer_output(candidate, sizes: LayerSizes) -> np.ndarray:
    weights, x, keep = encoder_layer_problem(sizes)
    return candidate.encoder_layer(x, weights, sizes.h, sizes.eps, keep)


@_drawn_once
def decoder_layer_problem(sizes: LayerSizes):
    """Weights, decoder states y (B, T), memory (B, S) and both padding masks."""
    rng = sizes.rng()
    weights = layer_weights(sizes, "decoder", rng)
    y, memory = activations(rng, sizes.B, sizes.T, sizes.d_model), activations(rng, sizes.B, sizes.S, sizes.d_model)
    return weights, y, memory, trailing_keep(rng, sizes.B, sizes.T), trailing_keep(rng, sizes.B, sizes.S)


def decoder_layer_output(candidate, sizes: LayerSizes) -> np.ndarray:
    weights, y, memory, tgt_keep, src_keep = decoder_layer_problem(sizes)
    return candidate.decoder_layer(y, memory, weights, sizes.h, sizes.eps, tgt_keep, src_keep)


@_drawn_once
def attention_problem(sizes: LayerSizes, *, cross: bool):
    """Weights, queries (B, T), keys = values (B, S when ``cross``, else the queries) and key padding (B, Lq, Lk)."""
    rng = sizes.rng()
    weights = random_weights(attention_shapes(sizes.d_model, bias=sizes.bias), rng)
    query = activations(rng, sizes.B, sizes.T, sizes.d_model)
    key = activations(rng, sizes.B, sizes.S, sizes.d_model) if cross else query
    return weights, query, key, key_padding(trailing_keep(rng, sizes.B, key.shape[1]), query.shape[1])


def attention_answer(candidate, sizes: LayerSizes, *, cross: bool) -> tuple[np.ndarray, np.ndarray]:
    """The candidate's (output, weights) on the self-attention (or, ``cross``, cross-attention) problem."""
    weights, query, key, keep = attention_problem(sizes, cross=cross)
    return candidate.multi_head_attention(query, key, key, weights, sizes.h, keep)


def self_attention_whole(candidate, sizes: LayerSizes) -> tuple[np.ndarray, np.ndarray]:
    return attention_answer(candidate, sizes, cross=False)


def cross_attention_whole(candidate, sizes: LayerSizes) -> tuple[np.ndarray, np.ndarray]:
    return attention_answer(candidate, sizes, cross=True)


def self_attention_output(candidate, sizes: LayerSizes) -> np.ndarray:
    return attention_answer(candidate, sizes, cross=False)[0]


def self_attention_weights(candidate, sizes: LayerSizes) -> np.ndarray:
    return attention_answer(candidate, sizes, cross=False)[1]


def cross_attention_output(candidate, sizes: LayerSizes) -> np.ndarray:
    return attention_answer(candidate, sizes, cross=True)[0]


def cross_attention_weights(candidate, sizes: LayerSizes) -> np.ndarray:
    return attention_answer(candidate, sizes, cross=True)[1]


def feed_forward_problem(sizes: LayerSizes):
    rng = sizes.rng()
    weights = random_weights(ffn_shapes(sizes.d_model, sizes.d_ff), rng)
    return weights, activations(rng, sizes.B, sizes.S, sizes.d_model), rng


def feed_forward_output(candidate, sizes: LayerSizes) -> np.ndarray:
    weights, x, _ = feed_forward_problem(sizes)
    return candidate.feed_forward(x, weights)


# The composite sublayers, LayerNorm(x + Sublayer(x)), whose LayerNorm the composite parts name "norm."
def sublayer_norm(d_model: int) -> dict[str, tuple[int]]:
    return {"norm.gamma": (d_model,), "norm.beta": (d_model,)}


@_drawn_once
def attention_sublayer_problem(sizes: LayerSizes, *, cross: bool):
    """Weights {W_Q.., norm.gamma, norm.beta}, x (B, T, d), memory (B, S, d) or None, key padding (B, T, Lk)."""
    rng = sizes.rng()
    weights = random_weights({**attention_shapes(sizes.d_model, bias=sizes.bias), **sublayer_norm(sizes.d_model)},
                             rng)
    x = activations(rng, sizes.B, sizes.T, sizes.d_model)
    memory = activations(rng, sizes.B, sizes.S, sizes.d_model) if cross else None
    keys = sizes.S if cross else sizes.T
    return weights, x, memory, key_padding(trailing_keep(rng, sizes.B, keys), sizes.T)


def attention_sublayer_output(candidate, sizes: LayerSizes, *, cross: bool) -> np.ndarray:
    weights, x, memory, keep = attention_sublayer_problem(sizes, cross=cross)
    return candidate.attention_sublayer(x, memory, weights, sizes.h, sizes.eps, keep)


def self_attention_sublayer_output(candidate, sizes: LayerSizes) -> np.ndarray:
    return attention_sublayer_output(candidate, sizes, cross=False)


def cross_attention_sublayer_output(candidate, sizes: LayerSizes) -> np.ndarray:
    return attention_sublayer_output(candidate, sizes, cross=True)


@_drawn_once
def ffn_sublayer_problem(sizes: LayerSizes):
    rng = sizes.rng()
    weights = random_weights({**ffn_shapes(sizes.d_model, sizes.d_ff), **sublayer_norm(sizes.d_model)}, rng)
    return weights, activations(rng, sizes.B, sizes.S, sizes.d_model)


def ffn_sublayer_output(candidate, sizes: LayerSizes) -> np.ndarray:
    weights, x = ffn_sublayer_problem(sizes)
    return candidate.ffn_sublayer(x, weights, sizes.eps)


# --------------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------------


@_drawn_once
def model_problem(sizes: ModelSizes):
    """Weights for the config, a padded source (B, S) and a padded decoder input (B, T) from <s>."""
    rng = sizes.rng()
    weights = model_weights(sizes.config, rng)
    src, tgt_in = source_and_target(sizes, rng)
    return weights, src, tgt_in


def logits(candidate, sizes: ModelSizes) -> np.ndarray:
    weights, src, tgt_in = model_problem(sizes)
    return loaded_model(candidate, sizes.config, weights).forward(src, tgt_in)


def pad_columns(ids: np.ndarray, k: int, pad_id: int) -> np.ndarray:
    return np.concatenate([ids, np.full((ids.shape[0], k), pad_id, dtype=ids.dtype)], axis=1)


def logits_after_source_padding(candidate, sizes: ModelSizes, *, k: int) -> np.ndarray:
    """The logits once k padding tokens are appended to the source: what a padding invariance is about, so
    that only a bug that changes them (not any bug that changes the logits) matches the candidate's."""
    weights, src, tgt_in = model_problem(sizes)
    return loaded_model(candidate, sizes.config, weights).forward(pad_columns(src, k, sizes.config.pad_id), tgt_in)


def real_logits_after_target_padding(candidate, sizes: ModelSizes, *, k: int) -> np.ndarray:
    """The logits at the decoder input's real positions once k padding tokens are appended to it."""
    weights, src, tgt_in = model_problem(sizes)
    after = loaded_model(candidate, sizes.config, weights).forward(src, pad_columns(tgt_in, k, sizes.config.pad_id))
    return after[:, : sizes.T][tgt_in != sizes.config.pad_id]


@_drawn_once
def empty_source_problem(sizes: ModelSizes):
    """The model problem with one more sentence, its source all padding and its decoder input sentence 0's, and
    the weights with the padding token's source embedding redrawn: weights, moved weights, src, tgt_in. (The batch
    keeps its full-length source: code that sizes its masks by the longest sentence still gets S keys.)"""
    weights, src, tgt_in = model_problem(sizes)
    pad, table = sizes.config.pad_id, "E" if sizes.config.share_embeddings else "E_src"
    empty = np.concatenate([src, np.full_like(src[:1], pad)])
    tgt_in = np.concatenate([tgt_in, tgt_in[:1]])
    moved = dict(weights)
    moved[table] = weights[table].copy()
    moved[table][pad] = -weights[table][pad] + sizes.rng().standard_normal(weights[table].shape[1]).astype(
        weights[table].dtype)
    return weights, moved, empty, tgt_in


def logits_of_an_empty_source(candidate, sizes: ModelSizes, *, moved: bool = False, longer: int = 0) -> np.ndarray:
    """The all-padding sentence's logits at its real target positions, every column but the padding token's (the
    tied output layer reads E[pad] there), centred per position (a log-softmax's normaliser reads that column
    too); ``moved``: with E[pad] redrawn; ``longer``: every source with that many more padding tokens (a row that
    reads its padding uniformly reads other positions' encodings then)."""
    weights, other, src, tgt_in = empty_source_problem(sizes)
    pad = sizes.config.pad_id
    src = pad_columns(src, longer, pad) if longer else src
    logits = loaded_model(candidate, sizes.config, other if moved else weights).forward(src, tgt_in)[-1]
    kept = np.delete(np.asarray(logits, np.float64)[tgt_in[-1] != pad], pad, axis=-1)
    return kept - kept.mean(-1, keepdims=True)


def memory(candidate, sizes: ModelSizes) -> np.ndarray:
    weights, src, _ = model_problem(sizes)
    return loaded_model(candidate, sizes.config, weights).encode(src)


memory.side = "encoder"  # the half of the model it asks (the diagnosis describes it by that half's readings)


@_drawn_once
def oracle_memory(sizes: ModelSizes) -> np.ndarray:
    """The float64 reference's memory, rounded to float32: the same decoder input, to the bit, for everyone."""
    weights, src, _ = model_problem(sizes)
    return oracle.OracleModel(sizes.config, weights).encode(src).astype(np.float32)


def decoded(candidate, sizes: ModelSizes) -> np.ndarray:
    """decode(tgt_in, memory, src) with the reference's memory."""
    weights, src, tgt_in = model_problem(sizes)
    return loaded_model(candidate, sizes.config, weights).decode(tgt_in, oracle_memory(sizes), src)


decoded.side = "decoder"
