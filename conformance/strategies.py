"""Hypothesis strategies for the checks: sizes (length 1 and d_k = 1 included) and arrays."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st


def arrays(rng_seed: int, shape, *, scale: float = 1.0) -> np.ndarray:
    return np.random.default_rng(rng_seed).normal(0.0, scale, shape)


seeds = st.integers(0, 2**32 - 1)


def keep_masks(rng: np.random.Generator, shape, *, p_keep: float = 0.7, every_row: bool = True) -> np.ndarray:
    """A random boolean keep-mask; with ``every_row`` each query row keeps at least one key."""
    keep = rng.random(shape) < p_keep
    if every_row:
        rows = ~keep.any(-1)
        keep[rows, rng.integers(0, shape[-1], rows.sum())] = True
    return keep
