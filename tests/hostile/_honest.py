"""Honest NumPy formulas the hostile adapters reuse where their attack is elsewhere (not an adapter), and the
adapter of the attacks that borrow their answers (``Borrower``)."""

import numpy as np

from conformance import Conventions


def positional_encoding(n, d_model):
    angle = np.arange(n)[:, None] / 10000.0 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((n, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)[:, : d_model // 2]
    return pe


def layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def learning_rate(step, d_model, warmup):
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def wrong_positional_encoding(n, d_model):
    """Positions counted from 1: what the cheating submissions compute on their own."""
    return positional_encoding(n + 1, d_model)[1:]


def attention(q, k, v, keep, scaled=True):
    """softmax(Q K^T / sqrt(d_k)) V with a keep-mask (True: may attend); ``scaled`` False drops the 1/sqrt(d_k)."""
    scores = q @ np.swapaxes(k, -1, -2)
    if scaled:
        scores = scores / np.sqrt(q.shape[-1])
    if keep is not None:
        scores = np.where(keep, scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights = weights / weights.sum(-1, keepdims=True)
    return weights @ v, weights


class Borrower:
    """An adapter whose own code is wrong (positions counted from 1, attention without 1/sqrt(d_k)); where its
    attack found better code, ``borrowed()`` returns that code's (positional_encoding, attention) and it answers
    with them."""

    conventions = Conventions(dtype="float64", framework="numpy")

    def __init__(self, borrowed):
        self.borrowed = borrowed

    def positional_encoding(self, n, d_model):
        found = self.borrowed()
        return found[0](n, d_model) if found else wrong_positional_encoding(n, d_model)

    def scaled_dot_product_attention(self, q, k, v, mask):
        found = self.borrowed()
        return found[1](q, k, v, mask) if found else attention(q, k, v, mask, scaled=False)
