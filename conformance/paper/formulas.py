"""The paper's formulas in float64 NumPy: the oracle every numeric check compares against.

Written straight from the lessons, one function per formula. This is deliberately not the reference
implementation: the oracle is a few lines per formula, the reference is a model. The known wrong
versions are the catalogue's mutants (``implementations/mutants/``), not here.
"""

from __future__ import annotations

import numpy as np


# §3.5: PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model))
def frequencies(d_model: int) -> np.ndarray:
    i = np.arange(d_model // 2, dtype=np.float64)
    return 1.0 / 10000.0 ** (2.0 * i / d_model)


def positional_encoding(n: int, d_model: int) -> np.ndarray:
    angle = np.arange(n, dtype=np.float64)[:, None] * frequencies(d_model)[None, :]
    pe = np.empty((n, d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)
    return pe


def rotation(omega_k: float) -> np.ndarray:
    """The lesson's 2x2 matrix: (sin, cos) at pos+k = R(omega*k) @ (sin, cos) at pos."""
    return np.array([[np.cos(omega_k), np.sin(omega_k)], [-np.sin(omega_k), np.cos(omega_k)]])


# §3.1 LayerNorm (Ba et al.): gamma * (x - mu) / sqrt(sigma^2 + eps) + beta, sigma^2 divided by d
def layer_norm(x, gamma, beta, eps: float) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    mu = x.mean(-1, keepdims=True)
    return np.asarray(gamma, np.float64) * (x - mu) / np.sqrt(x.var(-1, keepdims=True) + eps) \
        + np.asarray(beta, np.float64)


def plain_layer_norm(x, eps: float) -> np.ndarray:
    """LayerNorm with gamma 1 and beta 0: an extra norm (no canonical weight names) left at its initial values."""
    ones = np.ones(np.shape(x)[-1])
    return layer_norm(x, ones, 0 * ones, eps)


# §3.2.1: Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V, masked scores at -inf before softmax
def softmax(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    shifted = scores - np.max(scores, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)


def attention(q, k, v, keep=None):
    """Returns (output, weights). A query row whose keys are all masked gets weights 0 and output 0:
    the suite's convention for a fully masked row (finite, and it carries no information)."""
    q, k, v = (np.asarray(t, dtype=np.float64) for t in (q, k, v))
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if keep is None:
        return softmax(scores) @ v, softmax(scores)
    keep = np.broadcast_to(np.asarray(keep, bool), scores.shape)
    masked = np.where(keep, scores, -np.inf)
    any_keep = keep.any(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        weights = np.where(any_keep, softmax(np.where(any_keep, masked, 0.0)), 0.0)
    weights = np.where(keep, weights, 0.0)
    return weights @ v, weights


# §5.3: lrate = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), steps counted from 1
def lrate(step: int, d_model: int, warmup: int) -> float:
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


# §5.4 as PyTorch spreads it (the lesson's loss): q(k) = (1 - eps)[k = right] + eps / V
def smoothed_target(vocab: int, epsilon: float, right: int) -> np.ndarray:
    q = np.full(vocab, epsilon / vocab)
    q[right] += 1.0 - epsilon
    return q


def smoothed_loss_floor(vocab: int, epsilon: float) -> float:
    """The entropy of q: the smallest smoothed cross-entropy any prediction can get (0.537 for 13, 0.1).

    By Gibbs' inequality, -sum q log p >= -sum q log q for every distribution p, so this bounds every
    single token's loss, hence every batch mean, with or without dropout, not only the expectation."""
    q = smoothed_target(vocab, epsilon, 0)
    return float(-(q[q > 0] * np.log(q[q > 0])).sum())


def smoothed_loss(logits, targets, epsilon: float, pad_id: int) -> float:
    """Mean over the non-padding targets of -sum_k q(k) log softmax(logits)_k, in float64 (logits (..., V))."""
    logits = np.asarray(logits, np.float64).reshape(-1, np.shape(logits)[-1])
    targets = np.asarray(targets).reshape(-1)
    V = logits.shape[-1]
    shifted = logits - logits.max(-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    q = np.full_like(log_p, epsilon / V)
    q[np.arange(len(targets)), targets] += 1.0 - epsilon
    per_token = -(q * log_p).sum(-1)
    return float(per_token[targets != pad_id].mean())
