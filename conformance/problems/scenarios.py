"""Random problems for the layer and model checks: sizes (hypothesis), weights, activations, token ids.

Every array is float32-valued (float64 candidates receive the same values exactly), so the candidate
and the float64 oracle (``conformance.problems.oracle``) compute on identical inputs. Sizes include the edge
cases the lessons' formulas allow: batch 1, sequences of length 1, d_k = 1, d_ff = 1, a target
longer or shorter than the source (non-square cross-attention), and trailing padding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from hypothesis import Phase, settings
from hypothesis import strategies as st

from conformance.config import ModelConfig
from conformance.weights import (
    DECODER_SUBLAYERS,
    ENCODER_SUBLAYERS,
    attention_shapes,
    ffn_shapes,
    model_shapes,
    norm_shapes,
    random_weights,
)


def arrays(rng_seed: int, shape, *, scale: float = 1.0) -> np.ndarray:
    return np.random.default_rng(rng_seed).normal(0.0, scale, shape)


seeds = st.integers(0, 2**32 - 1)


def keep_masks(rng: np.random.Generator, shape, *, p_keep: float = 0.7, every_row: bool = True) -> np.ndarray:
    """A random boolean keep-mask; with ``every_row`` each query row keeps at least one key (a fully masked
    row is the suite's convention, judged by its own checks only: docs/claims.md)."""
    keep = rng.random(shape) < p_keep
    if every_row:
        rows = ~keep.any(-1)
        keep[rows, rng.integers(0, shape[-1], rows.sum())] = True
    return keep


EPS = 1e-5  # LayerNorm epsilon of the layer checks (PyTorch's default, the lesson's 10^-5)
MIN_D_MODEL = 4
"""Smallest d_model drawn. LayerNorm over d = 1 returns beta whatever comes in, and over d = 2 it maps
every vector to one of two points (+-gamma + beta), so most bugs (and their likely causes) would be
indistinguishable there; d_k = 1 is still drawn, with h = 4."""


@dataclass(frozen=True)
class LayerSizes:
    """One layer problem: batch B, source length S, target length T, h heads of d_k, d_ff."""

    B: int
    S: int
    T: int
    h: int
    d_k: int
    d_ff: int
    bias: bool
    seed: int
    eps: float = 1e-5  # LayerNorm epsilon (EPS); a candidate that declares another gets its own (supports.fit)

    @property
    def d_model(self) -> int:
        return self.h * self.d_k

    def rng(self) -> np.random.Generator:
        return np.random.default_rng(self.seed)


@st.composite
def layer_sizes(draw, *, max_len: int = 7) -> LayerSizes:
    h, d_k = draw(st.integers(1, 4)), draw(st.integers(1, 8))
    if h * d_k < 4:  # d_k = 1 stays (with h = 4); see MIN_D_MODEL
        d_k = -(-MIN_D_MODEL // h)
    return LayerSizes(
        B=draw(st.integers(1, 3)), S=draw(st.integers(1, max_len)), T=draw(st.integers(1, max_len)),
        h=h, d_k=d_k, d_ff=draw(d_ff_for(h * d_k, 32)), bias=draw(st.booleans()), seed=draw(seeds),
    )


def d_ff_for(d_model: int, most: int) -> st.SearchStrategy[int]:
    """Any d_ff from 1 (the edge case) to ``most``, or the paper's 4 d_model: an implementation that builds
    only the paper's shape, and does not say so, still gets examples it can run."""
    return st.one_of(st.integers(1, most), st.just(4 * d_model))


def _shapes_of(kind: str, d_model: int, d_ff: int, bias: bool) -> dict[str, tuple[int, ...]]:
    if kind == "attention":
        return attention_shapes(d_model, bias=bias)
    return ffn_shapes(d_model, d_ff) if kind == "ffn" else norm_shapes(d_model)


def layer_weight_shapes(stack: str, d_model: int, d_ff: int, *, bias: bool = True) -> dict[str, tuple[int, ...]]:
    """``conformance.weights.layer_shapes`` without a ModelConfig (so d_model may be odd here)."""
    sublayers = ENCODER_SUBLAYERS if stack == "encoder" else DECODER_SUBLAYERS
    return {f"{sub}.{name}": shape for sub, kind in sublayers
            for name, shape in _shapes_of(kind, d_model, d_ff, bias).items()}


def layer_weights(sizes: LayerSizes, stack: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return random_weights(layer_weight_shapes(stack, sizes.d_model, sizes.d_ff, bias=sizes.bias), rng)


def activations(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    """Random float32-valued activations (returned as float32)."""
    return rng.normal(0.0, scale, shape).astype(np.float32)


def trailing_keep(rng: np.random.Generator, B: int, L: int, *, full_row: bool = False) -> np.ndarray:
    """(B, L) keep mask: each row real for a random length 1..L, then padding (collator-style).

    With ``full_row`` the first row has no padding, as in a batch padded to its longest member."""
    lengths = rng.integers(1, L + 1, B)
    if full_row:
        lengths[0] = L
    return np.arange(L)[None, :] < lengths[:, None]


def key_padding(keep: np.ndarray, Lq: int) -> np.ndarray:
    """(B, Lk) key keep mask -> (B, Lq, Lk): the same row for every query (padding hides keys only)."""
    return np.broadcast_to(np.asarray(keep, bool)[:, None, :], (keep.shape[0], Lq, keep.shape[1])).copy()


class SmoothedLossProblem(NamedTuple):
    """One question to the label-smoothed loss, in the order ``label_smoothed_loss`` takes it: logits (N, V),
    targets (N,), eps, pad_id. A candidate that declares the loss's eps gets its own (``supports.fit``)."""

    logits: np.ndarray
    targets: np.ndarray
    eps: float
    pad_id: int


def no_padding(V: int) -> int:
    """The pad_id that means "no padding here" for a loss over V tokens whose targets are the listing's
    right token (5) and whose probed "other" token is 0: a valid id that is none of them. PyTorch's -100
    would crash an implementation that zeroes or indexes a padding column (the annotated transformer's)."""
    return V - 1


# --------------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelSizes:
    """One model problem: a small ModelConfig plus the batch and the lengths to run it on."""

    config: ModelConfig
    B: int
    S: int
    T: int
    seed: int

    def rng(self) -> np.random.Generator:
        return np.random.default_rng(self.seed)


@st.composite
def model_sizes(draw, *, max_len: int = 6, max_layers: int = 2) -> ModelSizes:
    h, d_k = draw(st.integers(1, 4)), draw(st.integers(1, 6))
    if h * d_k < MIN_D_MODEL:
        d_k = -(-MIN_D_MODEL // h)
    if (h * d_k) % 2:  # the sinusoidal encoding needs an even d_model (§3.5)
        d_k += 1
    vocab = draw(st.integers(4, 16))  # pad 0, <s> 1, </s> 2, and at least one ordinary token
    config = ModelConfig(
        src_vocab=vocab, tgt_vocab=vocab, d_model=h * d_k, h=h, d_ff=draw(d_ff_for(h * d_k, 16)),
        N=draw(st.integers(1, max_layers)), attention_bias=draw(st.booleans()),
    )
    return ModelSizes(config, B=draw(st.integers(1, 3)), S=draw(st.integers(1, max_len)),
                      T=draw(st.integers(1, max_len)), seed=draw(seeds))


def model_weights(config: ModelConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return random_weights(model_shapes(config), rng)


def token_ids(rng: np.random.Generator, config: ModelConfig, B: int, L: int, *, keep=None,
              start: int | None = None) -> np.ndarray:
    """(B, L) ids of ordinary tokens (not pad, <s>, </s>), ``pad_id`` where ``keep`` is False;
    ``start`` (e.g. ``bos_id``) in column 0, as in a decoder input shifted right."""
    first = max(config.pad_id, config.bos_id, config.eos_id) + 1
    ids = rng.integers(first, config.tgt_vocab, (B, L))
    if start is not None:
        ids[:, 0] = start
    if keep is not None:
        ids = np.where(keep, ids, config.pad_id)
    return ids.astype(np.int64)


def source_and_target(sizes: ModelSizes, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A padded source (B, S) and a padded decoder input (B, T) starting with <s>."""
    cfg = sizes.config
    src = token_ids(rng, cfg, sizes.B, sizes.S, keep=trailing_keep(rng, sizes.B, sizes.S, full_row=True))
    tgt = token_ids(rng, cfg, sizes.B, sizes.T, keep=trailing_keep(rng, sizes.B, sizes.T, full_row=True),
                    start=cfg.bos_id)
    return src, tgt


def loaded_model(candidate, config: ModelConfig, weights: dict[str, np.ndarray]):
    """The candidate's model for ``config`` (seed 0) with the canonical ``weights`` loaded."""
    model = candidate.build_model(config, seed=0)
    model.load_weights(weights)
    return model


LOADED_MODEL = ("build_model", "model.load_weights")
"""The parts every model-level check needs besides the method it calls: a model with the suite's weights."""


def fast_failure(fraction: float = 1.0) -> settings:
    """Hypothesis settings for the catalogue's property checks: ``fraction`` of the profile's examples,
    and a failure reported as found, without shrinking or explaining it.

    A failing check would otherwise replay its example hundreds of times while shrinking (each replay
    runs the candidate, and for a model check builds two models): seconds per failing check, minutes
    for a broken implementation. The first failing example hypothesis finds is already small (it starts
    from the smallest sizes), and the message names the likely cause and the first layer that diverges.
    Read at import time, after the plugin has loaded the profile, so ``--profile thorough`` scales it.
    """
    base = settings.default
    return settings(max_examples=max(3, round(base.max_examples * fraction)),
                    phases=[phase for phase in base.phases if phase not in (Phase.shrink, Phase.explain)])
