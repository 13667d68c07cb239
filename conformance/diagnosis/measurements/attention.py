"""§3.2.1 read off the candidate's attention weights: the scale of the scores, the softmax's axis, the mask.

The weights of one query row are softmax(s * Q K^T + M): the log of a visible key's weight is s times its score
less the row's normaliser, so s is a least-squares slope over the row, exact for any softmax of scaled scores
(and for a column, when the candidate normalises over the queries). Measured at several d_k and h, s is written
as a law c * d_k^a * h^b (the paper: d_k^-0.5). With a mask, the weights of the hidden keys say how they were
hidden: not at all, with a finite score, with the polarity inverted, or after the softmax.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from conformance.diagnosis.measurements.base import Knob, measurement
from conformance.diagnosis.neighbour import nice
from conformance.weights import attention_shapes, random_weights

FIT = 1e-4  # relative residual of a log-linear fit to float32 weights that still counts as exact
SEED = 20251


@dataclass(frozen=True)
class ScoreLaw:
    """Scores multiplied by c * d_k^a * h^b (the paper: c 1, a -1/2, b 0)."""

    c: float
    a: float
    b: float

    def factor(self, d_k, h) -> float:
        return self.c * d_k**self.a * h**self.b

    @property
    def paper(self) -> bool:
        return abs(self.c - 1) < 1e-6 and self.a == -0.5 and self.b == 0

    def written(self) -> str:
        if self.a == -0.5 and self.b == -0.5:
            size = "d_model^-0.5 = (h d_k)^-0.5"
        else:
            size = " ".join(part for part in (_power("d_k", self.a), _power("h", self.b)) if part) or ""
        factor = "" if abs(self.c - 1) < 1e-6 else f"{self.c:.4g}"
        text = " ".join(part for part in (factor, size) if part)
        return text or "1 (not scaled)"


def _power(name: str, exponent: float) -> str:
    return "" if exponent == 0 else f"{name}^{exponent:g}"


def _rows_fit(scores: np.ndarray, weights: np.ndarray, axis: int) -> float | None:
    """The s with log(weights) = s * scores - log Z along ``axis``, when it fits exactly; else None."""
    if weights.shape != scores.shape or not (weights > 0).all():
        return None
    logw = np.log(weights)
    S = scores - scores.mean(axis, keepdims=True)
    L = logw - logw.mean(axis, keepdims=True)
    denominator = float((S * S).sum())
    if denominator == 0:
        return None
    s = float((S * L).sum()) / denominator
    residual = float(np.abs(L - s * S).max())
    return s if residual <= FIT * max(1.0, float(np.abs(L).max())) else None


def _as(candidate, x) -> np.ndarray:
    """``x`` as the candidate computes on it (its dtype), in float64: the scores it actually saw."""
    return np.asarray(x, candidate.conventions.dtype).astype(np.float64)


def sdpa_scale(candidate, d_k: int, seed: int) -> tuple[float, int] | None:
    """(s, axis) read off the candidate's bare attention at ``d_k``, unmasked."""
    rng = np.random.default_rng(seed)
    q, k, v = (rng.normal(0, 1, shape) for shape in ((2, 5, d_k), (2, 6, d_k), (2, 6, 3)))
    _, weights = candidate.scaled_dot_product_attention(q, k, v, None)
    scores = _as(candidate, q) @ np.swapaxes(_as(candidate, k), -1, -2)
    return _either_axis(scores, np.asarray(weights, np.float64))


def _either_axis(scores, weights):
    for axis in (-1, -2):
        s = _rows_fit(scores, weights, axis)
        if s is not None:
            return s, axis
    return None


def _heads(x, W, b, h):
    y = x @ W + (0.0 if b is None else b)
    return y.reshape(*x.shape[:2], h, -1).transpose(0, 2, 1, 3)


def mha_problem(candidate, d_model: int, h: int, seed: int, *, transposed: bool = False):
    rng = np.random.default_rng(seed)
    for bias in (False, True):
        weights = random_weights(attention_shapes(d_model, bias=bias), rng)
        x = rng.normal(0, 1, (2, 5, d_model)).astype(np.float32)
        try:
            _, attn = candidate.multi_head_attention(x, x, x, weights, h, None)
        except Exception:  # noqa: BLE001 - the other bias setting, or nothing
            continue
        w = {name: _as(candidate, value).T if transposed else _as(candidate, value) for name, value in weights.items()}
        xs = _as(candidate, x)
        q, k = _heads(xs, w["W_Q"], w.get("b_Q"), h), _heads(xs, w["W_K"], w.get("b_K"), h)
        return q @ np.swapaxes(k, -1, -2), np.asarray(attn, np.float64)
    return None


def mha_scale(candidate, d_model: int, h: int, seed: int, *, transposed: bool = False) -> tuple[float, int] | None:
    found = mha_problem(candidate, d_model, h, seed, transposed=transposed)
    return None if found is None else _either_axis(*found)


@dataclass(frozen=True)
class Transposed:
    """Each projection read as (out, in): x W^T + b."""

    def __call__(self, x, W, b):
        return x @ np.swapaxes(W, -1, -2) + b


def _law(points: list[tuple[int, int, float]]) -> ScoreLaw | None:
    """c, a, b from (d_k, h, s) points: log s = log c + a log d_k + b log h (b 0 when h never varies)."""
    if any(s <= 0 for *_, s in points):
        return None
    hs = {h for _, h, _ in points}
    design = np.array([[1.0, math.log(d_k)] + ([math.log(h)] if len(hs) > 1 else []) for d_k, h, _ in points])
    target = np.log([s for *_, s in points])
    solution, *_ = np.linalg.lstsq(design, target, rcond=None)
    if np.abs(design @ solution - target).max() > 1e-3:
        return None
    c, a = math.exp(solution[0]), nice(float(solution[1]))
    b = nice(float(solution[2])) if len(hs) > 1 else 0.0
    c = 1.0 if abs(c - 1) < 1e-3 else c
    return ScoreLaw(c, a, b)


@measurement("score_scale", "refit", (), "attention scores multiplied by <c d_k^a h^b> (paper: d_k^-0.5); attention"
             " weights normalised over the queries; the projections read transposed",
             reads=("scaled_dot_product_attention", "multi_head_attention"))
def score_scale(candidate):
    """The score scale as a law of d_k and h, from the multi-head attention when it has one (h varies there),
    else from the bare attention; and the softmax's axis."""
    points, axes, transposed = [], set(), False
    if candidate.provides("multi_head_attention"):
        for transposed in (False, True):  # the heads' scores read with the projections as given, or transposed
            points, axes = [], set()
            for d_model, h in ((16, 2), (16, 4), (32, 2)):
                found = mha_scale(candidate, d_model, h, SEED + d_model + h, transposed=transposed)
                if found is None:
                    points = []
                    break
                points.append((d_model // h, h, found[0]))
                axes.add(found[1])
            if points:
                break
    if not points and candidate.provides("scaled_dot_product_attention"):
        axes = set()
        for d_k in (4, 16):
            found = sdpa_scale(candidate, d_k, SEED + d_k)
            if found is None:
                return []
            points.append((d_k, 1, found[0]))
            axes.add(found[1])
    if not points or len(axes) != 1:
        return []
    law = _law(points)
    if law is None:
        return []
    knobs = []
    if transposed and points:
        knobs.append(Knob("projection", Transposed(), "the attention projections read each matrix transposed: x W^T"
                          " instead of x W (an nn.Linear's weight loaded as it is), refitted from the candidate's"
                          " attention weights", "projection:transposed", {"projection": "transposed"}))
    if not law.paper:
        knobs.append(Knob("score_scale", law, f"attention scores multiplied by {law.written()} (paper: d_k^-0.5),"
                          " refitted from the candidate's attention weights",
                          f"score_scale:c={law.c:.4g},a={law.a:g},b={law.b:g}",
                          {"c": law.c, "a": law.a, "b": law.b}))
    if axes == {-2}:
        knobs.append(Knob("attention_mask", AttentionMask(axis=-2), "attention weights normalised over the queries"
                          " (each column sums to 1), not over the keys", "softmax_axis:queries", {"axis": "queries"}))
    return knobs


# -- the mask ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AttentionMask:
    """How hidden keys are hidden: mode "paper" (-inf before the softmax), "fill" (a finite score ``fill``),
    "ignored", "inverted" (the visible keys hidden instead); ``after_softmax``: the weights zeroed afterwards;
    ``axis``: the softmax's axis (-1 the keys)."""

    mode: str = "paper"
    fill: float = 0.0
    after_softmax: bool = False
    axis: int = -1

    def mask_scores(self, scores, additive):
        if additive is None or self.mode == "paper":
            return scores if additive is None else scores + additive
        hidden = np.isneginf(additive)
        if self.mode == "ignored":
            return scores
        if self.mode == "inverted":
            return np.where(hidden, scores, -np.inf)
        return np.where(hidden, self.fill, scores)

    def softmax(self, masked):
        shifted = masked - masked.max(self.axis, keepdims=True)
        e = np.exp(shifted)
        return e / e.sum(self.axis, keepdims=True)


MASKED_D_K = 8


def masked_weights(candidate, seed: int):
    """(scores, keep, weights) of the bare attention with a random mask in which every row keeps a key and hides
    one (d_k ``MASKED_D_K``)."""
    rng = np.random.default_rng(seed)
    B, Lq, Lk, d_k = 2, 5, 6, MASKED_D_K
    keep = rng.random((B, Lq, Lk)) < 0.6
    keep[..., 0], keep[..., 1] = True, False
    q, k, v = (rng.normal(0, 1, shape) for shape in ((B, Lq, d_k), (B, Lk, d_k), (B, Lk, 3)))
    if candidate.provides("scaled_dot_product_attention"):
        _, weights = candidate.scaled_dot_product_attention(q, k, v, keep)
        return _as(candidate, q) @ np.swapaxes(_as(candidate, k), -1, -2), keep, np.asarray(weights, np.float64)
    return None


def _fill(scores, keep, weights, s) -> tuple[str, float] | None:
    """How the hidden keys were weighted, when they were: ("ignored" | "fill", value) or ("inverted", 0)."""
    hidden = ~keep
    if (weights[keep] == 0).all() and (weights[hidden] > 0).all():
        return "inverted", 0.0
    if not ((weights > 0).all()):
        return None
    logw = np.log(weights)
    rows = np.where(keep, s * scores - logw, np.nan)  # at each visible key: its row's log normaliser
    z = np.nanmean(rows, axis=-1, keepdims=True)
    if np.nanmax(np.abs(rows - z)) > FIT * max(1.0, float(np.nanmax(np.abs(rows)))):
        return None  # the visible keys are not a softmax of the scaled scores
    filled = (logw + z)[hidden]
    if np.abs(filled - s * scores[hidden]).max() <= 1e-3:
        return "ignored", 0.0
    if np.ptp(filled) <= 1e-3 * max(1.0, float(np.abs(filled).max())):
        return "fill", float(np.round(filled.mean(), 4)) + 0.0
    return None


@measurement("attention_mask", "refit", ("scaled_dot_product_attention",),
             "the mask not applied; its polarity inverted; hidden scores set to <f> instead of -inf; the mask"
             " applied after the softmax", reads=("scaled_dot_product_attention", "multi_head_attention"))
def attention_mask(candidate):
    from conformance.diagnosis.measurements.base import measured

    scale = next((knob.law for item in _registered("score_scale") for knob in measured(candidate, item)
                  if knob.name == "score_scale"), None)
    axis_knob = next((knob for item in _registered("score_scale") for knob in measured(candidate, item)
                      if knob.name == "attention_mask"), None)
    if axis_knob is not None:
        return []  # the softmax's axis is the deviation; its mask follows the paper's
    found = masked_weights(candidate, SEED + 1)
    if found is None:
        return []
    scores, keep, weights = found
    s = scale.factor(MASKED_D_K, 1) if scale is not None else MASKED_D_K**-0.5
    hidden_zero = (weights[~keep] == 0).all()
    if hidden_zero:
        if np.abs(weights.sum(-1) - 1).max() <= 1e-5:
            return []  # the paper's mask
        e = np.exp(s * scores - (s * scores).max(-1, keepdims=True))
        unmasked = e / e.sum(-1, keepdims=True)
        if np.abs(np.where(keep, unmasked, 0.0) - weights).max() <= 1e-5:
            return [Knob("attention_mask", AttentionMask(after_softmax=True), "the mask applied after the softmax:"
                         " hidden keys' weights set to 0, the visible ones not renormalised (rows sum to less than"
                         " 1)", "attention_mask:after_softmax", {"mode": "after_softmax"})]
        return []
    how = _fill(scores, keep, weights, s)
    if how is None:
        return []
    mode, value = how
    texts = {"ignored": "the attention mask is not applied: hidden keys keep their full weight exp(s * score)",
             "inverted": "the attention mask's polarity is inverted: only the keys it hides get weight",
             "fill": f"hidden keys' scores set to {value:g} instead of -inf: each keeps a weight e^{value:g} / Z"}
    return [Knob("attention_mask", AttentionMask(mode=mode, fill=value), texts[mode],
                 f"attention_mask:{mode}" + (f"={value:g}" if mode == "fill" else ""), {"mode": mode, "fill": value})]


def _registered(name: str):
    from conformance.diagnosis.measurements.base import MEASUREMENTS

    return [item for item in MEASUREMENTS if item.name == name]
