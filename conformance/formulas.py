"""The paper's formulas in float64 NumPy: the oracle every numeric check compares against.

Written straight from the lessons, one function per formula, with the known wrong variants beside
them (``ALTERNATIVES``) so a failure can name its likely cause. This is deliberately not the
reference implementation: the oracle is a few lines per formula, the reference is a model.
"""

from __future__ import annotations

import numpy as np


# §3.5: PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model))
def frequencies(d_model: int, *, exponent_scale: float = 2.0) -> np.ndarray:
    i = np.arange(d_model // 2, dtype=np.float64)
    return 1.0 / 10000.0 ** (exponent_scale * i / d_model)


def positional_encoding(n: int, d_model: int, *, first: int = 0) -> np.ndarray:
    angle = np.arange(first, first + n, dtype=np.float64)[:, None] * frequencies(d_model)[None, :]
    pe = np.empty((n, d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)
    return pe


def pe_halves_concatenated(n: int, d_model: int) -> np.ndarray:
    angle = np.arange(n, dtype=np.float64)[:, None] * frequencies(d_model)[None, :]
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)


def pe_alternatives(n: int, d_model: int) -> dict[str, np.ndarray]:
    return {
        "sines and cosines concatenated in halves instead of interleaved (sin in 2i, cos in 2i+1)": (
            pe_halves_concatenated(n, d_model)
        ),
        "exponent i/d_model instead of 2i/d_model": _interleave(
            np.arange(n)[:, None] * frequencies(d_model, exponent_scale=1.0)[None, :]
        ),
        "positions counted from 1 instead of 0": positional_encoding(n, d_model, first=1),
        "sine and cosine swapped": _interleave(np.arange(n)[:, None] * frequencies(d_model)[None, :])[
            :, _swap(d_model)
        ],
    }


def _interleave(angle: np.ndarray) -> np.ndarray:
    pe = np.empty((angle.shape[0], 2 * angle.shape[1]))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return pe


def _swap(d_model: int) -> np.ndarray:
    idx = np.arange(d_model)
    return idx + np.where(idx % 2 == 0, 1, -1)


def rotation(omega_k: float) -> np.ndarray:
    """The lesson's 2x2 matrix: (sin, cos) at pos+k = R(omega*k) @ (sin, cos) at pos."""
    return np.array([[np.cos(omega_k), np.sin(omega_k)], [-np.sin(omega_k), np.cos(omega_k)]])


# §3.1 LayerNorm (Ba et al.): gamma * (x - mu) / sqrt(sigma^2 + eps) + beta, sigma^2 divided by d
def layer_norm(x, gamma, beta, eps: float, *, ddof: int = 0, eps_outside: bool = False) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    mu = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True, ddof=ddof) if x.shape[-1] > ddof else np.zeros_like(mu)
    denom = np.sqrt(var) + eps if eps_outside else np.sqrt(var + eps)
    return np.asarray(gamma, np.float64) * (x - mu) / denom + np.asarray(beta, np.float64)


def layer_norm_alternatives(x, gamma, beta, eps: float) -> dict[str, np.ndarray]:
    alternatives = {
        "eps added outside the square root: (x - mu) / (sigma + eps)": layer_norm(
            x, gamma, beta, eps, eps_outside=True
        ),
        "gamma and beta swapped": layer_norm(x, beta, gamma, eps),
    }
    if np.shape(x)[-1] > 1:
        alternatives = {
            "variance divided by d - 1 (unbiased) instead of d": layer_norm(x, gamma, beta, eps, ddof=1),
            **alternatives,
        }
    return alternatives


# §3.2.1: Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V, masked scores at -inf before softmax
def softmax(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    shifted = scores - np.max(scores, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)


def attention(q, k, v, keep=None, *, scale: float | None = None, axis: int = -1):
    """Returns (output, weights). A query row whose keys are all masked gets weights 0 and output 0:
    the suite's specified behaviour for a fully masked row (finite, and it carries no information)."""
    q, k, v = (np.asarray(t, dtype=np.float64) for t in (q, k, v))
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * scale
    if keep is None:
        return softmax(scores, axis) @ v, softmax(scores, axis)
    keep = np.broadcast_to(np.asarray(keep, bool), scores.shape)
    masked = np.where(keep, scores, -np.inf)
    any_keep = keep.any(axis=axis, keepdims=True)
    with np.errstate(invalid="ignore"):
        weights = np.where(any_keep, softmax(np.where(any_keep, masked, 0.0), axis), 0.0)
    weights = np.where(keep, weights, 0.0)
    return weights @ v, weights


def attention_alternatives(q, k, v, keep=None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    d_k = np.shape(q)[-1]
    alternatives = {
        "no 1/sqrt(d_k) scaling": attention(q, k, v, keep, scale=1.0),
        "scores divided by d_k instead of sqrt(d_k)": attention(q, k, v, keep, scale=1.0 / d_k),
    }
    if keep is None:
        alternatives["softmax over the query axis instead of the key axis"] = attention(q, k, v, keep, axis=-2)
    else:
        alternatives["mask ignored"] = attention(q, k, v, None)
    return alternatives
