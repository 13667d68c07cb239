"""The paper with measured constants: the candidate's *neighbouring formula*, built from what was fitted.

Each refit measurement (``diagnosis.measurements``) reads one formula of the paper off the candidate's own
outputs on purpose-built problems and, where the candidate's answer fits the paper's formula with other
constants (the scores scaled by d_k^-1, the frequencies over d_model - 2, eps outside the root, a warm-up peak
at 40,000), returns those constants as a *knob*: a small object that computes that one formula. ``Neighbour``
is the NumPy implementation (float64, ``implementations/numpy_impl``), whose formulas are one method each, with
every knob in place of the paper's formula; its model uses them all, so the neighbour answers any question the
suite asks, part, layer or model, and can be confirmed like a known bug: its answer must equal the candidate's on
the failing problem and on a second one where it differs from the paper's.

A knob is not a known bug: its constants are fitted from the candidate, not taken from a list. The knobs
read by each method are named by the measurement that fits them (``KNOB_NAMES``).
"""

from __future__ import annotations

import math

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter, NumpyModel

# The knob names a Neighbour reads, each with the NumpyAdapter methods it stands in for.
KNOB_NAMES = {
    "score_scale": ("scale_scores",),
    "projection": ("project",),
    "attention_mask": ("mask_scores", "softmax", "attention_weights"),
    "positional_table": ("pe_positions", "pe_frequencies", "pe_interleave"),
    "layer_norm": ("layer_norm",),
    "activation": ("activation",),
    "ffn_inner": ("feed_forward",),
    "schedule": ("learning_rate",),
    "smoothing": ("smoothed_target", "token_losses", "reduce_loss"),
    "model_scales": ("model",),
}


class NeighbourModel(NumpyModel):
    """The NumPy model with the measured embedding scale, positional multiplier, logit scale and output form."""

    def _embed(self, ids, side):
        scales = self.adapter.knobs.get("model_scales")
        if scales is None:
            return super()._embed(ids, side)
        d_model = self.config.d_model
        pe = self.adapter.sinusoids(ids.shape[1], d_model)
        return self._table(side)[ids] * scales.embedding(d_model) + scales.positions * pe[None]

    def _logits(self, y):
        logits = super()._logits(y)
        scales = self.adapter.knobs.get("model_scales")
        return logits if scales is None else scales.output(logits, self.config.d_model)


class Neighbour(NumpyAdapter):
    """The paper's formulas, each replaced by its knob where one was measured (``knobs``: name -> knob)."""

    model_class = NeighbourModel

    def __init__(self, knobs: dict):
        self.knobs = dict(knobs)

    def __repr__(self) -> str:
        return f"Neighbour({', '.join(sorted(self.knobs))})"

    def _knob(self, name: str):
        return self.knobs.get(name)

    # §3.2.2
    def project(self, x, W, b):
        layout = self._knob("projection")
        return super().project(x, W, b) if layout is None else layout(x, W, b)

    # §3.2.1
    def scale_scores(self, scores, d_k, h):
        law = self._knob("score_scale")
        return super().scale_scores(scores, d_k, h) if law is None else scores * law.factor(d_k, h)

    def mask_scores(self, scores, additive):
        mask = self._knob("attention_mask")
        return super().mask_scores(scores, additive) if mask is None else mask.mask_scores(scores, additive)

    def softmax(self, masked):
        mask = self._knob("attention_mask")
        return super().softmax(masked) if mask is None else mask.softmax(masked)

    def attention_weights(self, scores, additive):
        mask = self._knob("attention_mask")
        if mask is None or not mask.after_softmax:
            return super().attention_weights(scores, additive)
        weights = mask.softmax(scores)
        return weights if additive is None else np.where(np.isneginf(additive), 0.0, weights)

    # §3.5
    def pe_positions(self, n):
        table = self._knob("positional_table")
        return super().pe_positions(n) if table is None else np.arange(n, dtype=np.float64) + table.offset

    def pe_frequencies(self, d_model):
        table = self._knob("positional_table")
        return super().pe_frequencies(d_model) if table is None else table.frequencies(d_model)

    def pe_interleave(self, angles):
        table = self._knob("positional_table")
        return super().pe_interleave(angles) if table is None else table.interleave(angles)

    # §3.1
    def layer_norm(self, x, gamma, beta, eps):
        norm = self._knob("layer_norm")
        return super().layer_norm(x, gamma, beta, eps) if norm is None else norm(x, gamma, beta, eps)

    # §3.3
    def activation(self, z):
        fn = self._knob("activation")
        return super().activation(z) if fn is None else fn(z)

    def feed_forward(self, x, weights):
        inner = self._knob("ffn_inner")
        if inner is None:
            return super().feed_forward(x, weights)
        k = inner.units(np.shape(weights["W1"])[1])
        return self.activation(x @ weights["W1"][:, :k] + weights["b1"][:k]) @ weights["W2"][:k] + weights["b2"]

    # §5.3
    def learning_rate(self, step, d_model, warmup):
        law = self._knob("schedule")
        return super().learning_rate(step, d_model, warmup) if law is None else law(step, d_model, warmup)

    # §5.4
    def smoothed_target(self, targets, V, epsilon, pad_id):
        law = self._knob("smoothing")
        return super().smoothed_target(targets, V, epsilon, pad_id) if law is None else \
            law.target(targets, V, epsilon, pad_id)

    def token_losses(self, q, log_p):
        law = self._knob("smoothing")
        losses = super().token_losses(q, log_p)
        if law is None or not law.kl:
            return losses
        q_log_q = np.where(q > 0, q * np.log(np.where(q > 0, q, 1.0)), 0.0)
        return losses + q_log_q.sum(-1)

    def reduce_loss(self, per_token, targets, pad_id):
        law = self._knob("smoothing")
        if law is None or law.reduction == "mean":
            return super().reduce_loss(per_token, targets, pad_id)
        if law.reduction == "sum":
            return float(per_token[targets != pad_id].sum())
        return float(per_token.mean())  # "mean over every target, padding too"


def power_law_text(exponent: float, size: str) -> str:
    """d_k^-1, d_model^-0.5, 1 (exponent 0)."""
    if abs(exponent) < 1e-9:
        return "1"
    return f"{size}^{exponent:g}"


def nice(value: float, grid: float = 0.25, tol: float = 2e-3) -> float:
    """``value`` snapped to a multiple of ``grid`` when it is that close: exponents of size laws."""
    snapped = round(value / grid) * grid
    return snapped if abs(value - snapped) <= tol else value


def log_ratio(a: float, b: float) -> float:
    return math.log(a) - math.log(b)
