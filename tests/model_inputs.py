"""Inputs the suite's own tests build alike: padded token batches and the inputs of one encoder and decoder layer."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from conformance.config import ModelConfig
from conformance.weights import model_shapes, random_weights, sub_weights

PAD, BOS, EOS = 0, 1, 2


def padded_batch(rng: np.random.Generator, lengths: list[int], vocab: int, first: int | None = None) -> np.ndarray:
    """Rows of random real tokens (ids 3..vocab-1) padded to the longest; ``first`` replaces token 0."""
    batch = np.full((len(lengths), max(lengths)), PAD, dtype=np.int64)
    for row, n in enumerate(lengths):
        batch[row, :n] = rng.integers(3, vocab, n)
        if first is not None:
            batch[row, 0] = first
    return batch


class LayerInputs(NamedTuple):
    rng: np.random.Generator  # drawn from after the inputs, for more of them
    x: np.ndarray  # (2, 5, d_model): the encoder layer's input, and the decoder's memory
    y: np.ndarray  # (2, 4, d_model): the decoder layer's input
    src_keep: np.ndarray  # (2, 5) keep-mask, the second row padded after 3
    tgt_keep: np.ndarray  # (2, 4) keep-mask, the second row padded after 2
    enc: dict  # the weights of encoder layer 0 (random_weights: gamma far from 1, non-zero biases)
    dec: dict  # of decoder layer 0


def layer_inputs(cfg: ModelConfig, seed: int) -> LayerInputs:
    """Random inputs, padding masks and layer-0 weights for comparing one encoder and one decoder layer."""
    rng = np.random.default_rng(seed)
    weights = random_weights(model_shapes(cfg), rng)
    x = rng.normal(size=(2, 5, cfg.d_model)).astype(np.float32)
    y = rng.normal(size=(2, 4, cfg.d_model)).astype(np.float32)
    src_keep = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], dtype=bool)
    tgt_keep = np.array([[1, 1, 1, 1], [1, 1, 0, 0]], dtype=bool)
    return LayerInputs(rng, x, y, src_keep, tgt_keep, sub_weights(weights, "encoder.0."),
                       sub_weights(weights, "decoder.0."))
