"""Attention that masks the scores its output reads but hands back the map it drew before the mask: a deviation
in the returned weights alone (the output is the paper's). No known bug is this one: attention_mask_ignored also
leaves the output unmasked, so naming it would claim a deviation the output shows is absent."""

import numpy as np

from conformance import Conventions


def _softmax(scores):
    top = scores.max(-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


class MapBeforeMask:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

    def scaled_dot_product_attention(self, q, k, v, mask):
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        shown = _softmax(scores)
        used = shown if mask is None else _softmax(np.where(mask, scores, -np.inf))
        return used @ v, shown


adapter = MapBeforeMask()
