"""§3.1 read off the candidate's LayerNorm: which axis it normalises, the variance's divisor, where eps sits,
which of gamma and beta scales.

On rows of purpose-built variances (some so small that eps matters), the output is m * (x - mean) / D + a with
(m, a) = (gamma, beta), or swapped; D per row is then a least-squares ratio, and D^2 = sum((x - mean)^2) / (d -
k) + e (eps inside the root) or D = sqrt(sum(...) / (d - k)) + e (outside) is linear in the unknowns: k (the
paper: 0) and e / eps (the paper: 1) come out of one fit. A row that changes when another row does is normalised
over the wrong axis; the first axis is tried (BatchNorm's).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from conformance.diagnosis.measurements.base import Knob, measurement

EPS = 1e-3  # large enough that its place shows on the small rows
D = 8


@dataclass(frozen=True)
class LayerNormLaw:
    axis: int = -1
    ddof: float = 0.0  # the variance divided by d - ddof
    eps_outside: bool = False
    eps_factor: float = 1.0
    swapped: bool = False

    def __call__(self, x, gamma, beta, eps):
        x = np.asarray(x, np.float64)
        axis = self.axis if self.axis == -1 else 0
        centred = x - x.mean(axis, keepdims=True)
        n = x.shape[axis]
        variance = (centred**2).sum(axis, keepdims=True) / (n - self.ddof)
        e = eps * self.eps_factor
        denominator = np.sqrt(variance) + e if self.eps_outside else np.sqrt(variance + e)
        scale, shift = (beta, gamma) if self.swapped else (gamma, beta)
        return scale * centred / denominator + shift

    def texts(self) -> list[str]:
        found = []
        if self.axis != -1:
            found.append("each feature normalised over the first (batch) axis, not each row over its features")
        if self.ddof:
            found.append(f"the variance divided by d - {self.ddof:g} (paper: d)")
        if self.eps_outside:
            found.append("eps added outside the square root: (x - mu) / (sigma + eps) (paper: sqrt(sigma^2 + eps))")
        if self.eps_factor == 0.0:
            found.append("eps not added at all: (x - mu) / sigma (paper: sqrt(sigma^2 + eps))")
        elif self.eps_factor != 1.0:
            found.append(f"eps multiplied by {self.eps_factor:.4g}")
        if self.swapped:
            found.append("gamma and beta swapped: beta scales, gamma shifts")
        return found


def probe_rows(seed: int = 3):
    rng = np.random.default_rng(seed)
    scales = np.array([1.0, 0.05, 0.02, 3.0])[:, None]
    x = rng.normal(0, 1, (4, D)) * scales + rng.normal(0, 1, (4, 1))
    gamma, beta = 1 + rng.uniform(0.3, 0.8, D), rng.uniform(-0.5, 0.5, D)
    return x.astype(np.float32).astype(np.float64), gamma.astype(np.float32).astype(np.float64), \
        beta.astype(np.float32).astype(np.float64)


def _fit_rows(x, out, gamma, beta, swapped: bool) -> LayerNormLaw | None:
    scale, shift = (beta, gamma) if swapped else (gamma, beta)
    centred = x - x.mean(-1, keepdims=True)
    numerator = scale * centred
    target = out - shift
    denominators = (numerator * target).sum(-1) / (target * target).sum(-1)
    if not np.all(np.isfinite(denominators)) or (denominators <= 0).any():
        return None
    sums = (centred**2).sum(-1)
    for outside in (False, True):
        # inside: D^2 = sums * u + e; outside: D = sqrt(sums) * sqrt(u) + e; u = 1 / (d - k)
        lhs = denominators if outside else denominators**2
        feature = np.sqrt(sums) if outside else sums
        design = np.stack([feature, np.ones_like(feature)], axis=1)
        (slope, e), *_ = np.linalg.lstsq(design, lhs, rcond=None)
        u = slope**2 if outside else slope
        if u <= 0:
            continue
        ddof = D - 1 / u
        ddof = float(round(ddof)) if abs(ddof - round(ddof)) < 0.05 else float(ddof)
        factor = e / EPS
        factor = 1.0 if abs(factor - 1) < 0.05 else 0.0 if abs(factor) < 1e-3 else float(f"{factor:.3g}")
        law = LayerNormLaw(ddof=ddof, eps_outside=outside, eps_factor=factor, swapped=swapped)
        if np.abs(law(x, gamma, beta, EPS) - out).max() <= 1e-4 * max(1.0, float(np.abs(out).max())):
            return law
    return None


def fit_layer_norm(candidate) -> LayerNormLaw | None:
    x, gamma, beta = probe_rows()
    out = np.asarray(candidate.layer_norm(x, gamma, beta, EPS), np.float64)
    moved = x.copy()
    moved[0] = moved[0] * 2 + 1
    again = np.asarray(candidate.layer_norm(moved, gamma, beta, EPS), np.float64)
    if np.abs(again[1:] - out[1:]).max() > 1e-6:  # the other rows moved: not normalised row by row
        law = LayerNormLaw(axis=0)
        ok = all(np.abs(law(a, gamma, beta, EPS) - b).max() <= 1e-4 for a, b in ((x, out), (moved, again)))
        return law if ok else None
    for swapped in (False, True):
        law = _fit_rows(x, out, gamma, beta, swapped)
        if law is not None:
            return law
    return None


@measurement("layer_norm", "refit", ("layer_norm",),
             "the variance divided by d - <k>; eps added outside the square root; gamma and beta swapped; each"
             " feature normalised over the first (batch) axis")
def layer_norm(candidate):
    law = fit_layer_norm(candidate)
    if law is None or not law.texts():
        return []
    facts = {"axis": law.axis, "ddof": law.ddof, "eps_outside": law.eps_outside, "eps_factor": law.eps_factor,
             "swapped": law.swapped}
    key = "layer_norm:" + ",".join(f"{k}={v}" for k, v in facts.items())
    return [Knob("layer_norm", law, "LayerNorm refitted from the candidate's: " + "; ".join(law.texts()), key, facts)]
