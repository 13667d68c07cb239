"""§5.3 read off the candidate's rates: the warm-up and decay power laws, their peak, the step count, the scale.

The paper's rate is min of two power laws of the step, A s and B s^-0.5 (A = d_model^-0.5 warmup^-1.5, B =
d_model^-0.5): rising to a peak at s = warmup, then decaying. The candidate's rates over a log-spaced range of
steps (1 to 1,000 warmups) are fitted by the same form with every constant free: the two exponents (log-log
slopes at either end), the two scales, min or max, and the step count's offset (steps from 0 or 1, clamped at
1). Measured at three (d_model, warmup), each scale is a law c d_model^a warmup^b; the peak follows. Named when
the fitted formula gives every rate measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from conformance.diagnosis.measurements.base import Knob, measurement
from conformance.diagnosis.neighbour import nice

CONFIGS = ((512, 4000), (64, 4000), (64, 400))


def steps_for(warmup: int) -> np.ndarray:
    grid = np.unique(np.round(np.geomspace(1, 1000 * warmup, 80)).astype(int))
    return np.unique(np.concatenate([grid, [1, 2, 3, 4, warmup - 1, warmup, warmup + 1]]))


@dataclass(frozen=True)
class Scale:
    """c d_model^a warmup^b."""

    c: float
    a: float
    b: float

    def __call__(self, d_model, warmup) -> float:
        return self.c * d_model**self.a * warmup**self.b

    def written(self) -> str:
        parts = [f"{self.c:.4g}"] if abs(self.c - 1) > 1e-6 else []
        parts += [f"d_model^{self.a:g}"] if self.a else []
        parts += [f"warmup^{self.b:g}"] if self.b else []
        return " ".join(parts) or "1"


@dataclass(frozen=True)
class ScheduleLaw:
    """rate(s) = combine(A (s + o)^p, B (s + o)^q), s + o clamped at 1; ``combine`` min or max; a single power
    law when ``single`` (A, p only)."""

    A: Scale
    p: float
    B: Scale | None
    q: float
    combine: str  # "min" or "max"
    offset: int
    single: bool = False

    def __call__(self, step, d_model, warmup) -> float:
        s = max(step + self.offset, 1)
        rising = self.A(d_model, warmup) * s**self.p
        if self.single:
            return float(rising)
        falling = self.B(d_model, warmup) * s**self.q
        return float(min(rising, falling) if self.combine == "min" else max(rising, falling))

    def peak(self, d_model, warmup) -> float | None:
        """The step where the two laws cross (the paper: warmup)."""
        if self.single or self.p == self.q:
            return None
        return (self.B(d_model, warmup) / self.A(d_model, warmup)) ** (1 / (self.p - self.q)) - self.offset


PAPER = ScheduleLaw(Scale(1, -0.5, -1.5), 1.0, Scale(1, -0.5, 0.0), -0.5, "min", 0)


def _parts(steps, rates) -> tuple[np.ndarray, np.ndarray]:
    """The steps well before and well after the rate's turning point (its peak, or its trough), a factor 4 away
    from it; the first and last quarters when it has none."""
    turn = next((int(i) for i in (np.argmax(rates), np.argmin(rates)) if 0 < i < len(rates) - 1), None)
    if turn is not None:
        before, after = steps <= steps[turn] / 4, steps >= steps[turn] * 4
        if before.sum() >= 3 and after.sum() >= 3:
            return before, after
    quarter = max(4, len(steps) // 4)
    first, last = np.zeros(len(steps), bool), np.zeros(len(steps), bool)
    first[:quarter], last[-quarter:] = True, True
    return first, last


def _regime(steps, rates, offset, end: str) -> tuple[float, float, float]:
    """(exponent, log scale, worst residual) of the power law through the steps before or after the turn."""
    s = np.maximum(steps + offset, 1).astype(np.float64)
    part = _parts(steps, rates)[0 if end == "start" else 1]
    x, y = np.log(s[part]), np.log(rates[part])
    if np.ptp(x) == 0:
        return 0.0, float(y.mean()), 0.0
    slope, intercept = np.polyfit(x, y, 1)
    return float(slope), float(intercept), float(np.abs(intercept + slope * x - y).max())


def _scale(points: list[tuple[int, int, float]]) -> Scale | None:
    """c d^a w^b through (d, w, log scale) at the three CONFIGS."""
    design = np.array([[1.0, math.log(d), math.log(w)] for d, w, _ in points])
    (log_c, a, b), *_ = np.linalg.lstsq(design, np.array([v for *_, v in points]), rcond=None)
    c = math.exp(log_c)
    c = 1.0 if abs(c - 1) < 1e-3 else float(f"{c:.6g}")
    return Scale(c, nice(float(a)), nice(float(b)))


def fit_schedule(measured: dict) -> ScheduleLaw | None:
    """The law with every measured rate, from {(d_model, warmup): (steps, rates)}."""
    for offset in (0, -1, 1, -2, 2):
        fits = {}
        for config, (steps, rates) in measured.items():
            fits[config] = (_regime(steps, rates, offset, "start"), _regime(steps, rates, offset, "end"))
        p = nice(float(np.mean([start[0] for start, _ in fits.values()])))
        q = nice(float(np.mean([end[0] for _, end in fits.values()])))
        A = _scale([(d, w, start[1]) for (d, w), (start, _) in fits.items()])
        B = _scale([(d, w, end[1]) for (d, w), (_, end) in fits.items()])
        candidates = [ScheduleLaw(A, p, None, p, "min", offset, single=True)] if abs(p - q) < 1e-3 else [
            ScheduleLaw(A, p, B, q, "min" if p > q else "max", offset)]
        for law in candidates:
            if all(_fits(law, d, w, steps, rates) for (d, w), (steps, rates) in measured.items()):
                return law
    return None


def _fits(law: ScheduleLaw, d_model, warmup, steps, rates) -> bool:
    mine = np.array([law(int(s), d_model, warmup) for s in steps])
    return bool(np.all(np.abs(mine - rates) <= 1e-5 * np.abs(rates) + 1e-30))


def texts(law: ScheduleLaw) -> list[str]:
    """What differs from the paper's law, in words (the peak at d_model 512, warmup 4,000)."""
    found = []
    if law.offset:
        sign = "+" if law.offset > 0 else "-"
        found.append(f"the step counted {abs(law.offset)} {'ahead' if law.offset > 0 else 'behind'}: lrate(step"
                     f" {sign} {abs(law.offset)}), clamped at step 1")
    if law.single:
        if law.p == 0:
            found.append(f"a constant rate, {law.A.written()} at every step measured (up to 1,000 warmups; paper: a"
                         " rise to a peak at step warmup, then a decay as step^-0.5)")
        elif law.p < 0:
            found.append(f"no warm-up: the rate is {law.A.written()} step^{law.p:g} from step 1 (paper: a rise to a"
                         " peak at step warmup, then d_model^-0.5 step^-0.5)")
        else:
            found.append(f"the rate never decays: it is {law.A.written()} step^{law.p:g} at every step measured (up"
                         " to 1,000 warmups; paper: a peak at step warmup, then step^-0.5)")
        return found
    if law.combine == "max":
        cross = law.peak(512, 4000)
        where = f" after step {cross:,.0f} (d_model 512, warmup 4,000)" if cross else ""
        found.append(f"max instead of min of the two laws: the rate falls as step^{law.p:g}, then rises as"
                     f" step^{law.q:g}{where}")
        return found
    if law.p != 1.0:
        found.append(f"the warm-up rate grows as step^{law.p:g} (paper: step^1)")
    if law.q != -0.5:
        found.append(f"the decay goes as step^{law.q:g} (paper: step^-0.5)")
    if law.A.a == law.B.a and law.A.a != -0.5:
        found.append(f"rates scaled by d_model^{law.A.a:g} (paper: d_model^-0.5)")
    if law.A.c == law.B.c and law.A.c != 1:
        found.append(f"every rate multiplied by {law.A.c:g}")
    if law.B.b != 0:
        found.append(f"the decay scale depends on warmup: {law.B.written()} (paper: d_model^-0.5)")
    moved = law.A.b != -1.5 or law.A.c != law.B.c
    if moved and law.p == 1.0 and law.q == -0.5:
        peak = law.peak(512, 4000)
        if peak is not None:
            found.append(f"the warm-up peak is at step {peak:,.0f}, not 4,000 (d_model 512, warmup 4,000): the"
                         f" warm-up term is {law.A.written()} step (paper: d_model^-0.5 warmup^-1.5 step)")
    return found


@measurement("schedule", "refit", ("learning_rate",),
             "rates <c> times the paper's; d_model^<a>; the warm-up peak at step <s>; no warm-up; max instead of"
             " min; decay step^<q>; the step counted one ahead")
def schedule(candidate):
    measured = {}
    for d_model, warmup in CONFIGS:
        steps = steps_for(warmup)
        rates = np.array([float(candidate.learning_rate(int(s), d_model, warmup)) for s in steps])
        if not np.all(np.isfinite(rates)) or (rates <= 0).any():
            return []
        measured[(d_model, warmup)] = (steps, rates)
    law = fit_schedule(measured)
    if law is None or law == PAPER:
        return []
    found = texts(law)
    if not found:
        return []
    facts = {"offset": law.offset, "p": law.p, "q": law.q, "combine": law.combine, "single": law.single,
             "constant": law.single and law.p == 0,
             "A": [law.A.c, law.A.a, law.A.b], "B": None if law.B is None else [law.B.c, law.B.a, law.B.b]}
    key = "schedule:" + ",".join(f"{k}={v}" for k, v in facts.items())
    return [Knob("schedule", law, "learning-rate schedule refitted from the candidate's rates: " + "; ".join(found),
                 key, facts)]
