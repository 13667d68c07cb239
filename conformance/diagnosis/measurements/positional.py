"""§3.5 read off the candidate's table: which columns hold sines and cosines, the frequencies, the positions.

Each pair of columns of a sinusoidal table is (A sin(omega (pos + o)), A cos(omega (pos + o))): the angle
atan2(sin, cos), unwrapped along the positions, is a straight line whose slope is the pair's frequency and whose
intercept gives the offset o of the positions. Tried for the four usual layouts (sine and cosine interleaved or
in two halves, either one first); the frequencies then fit omega_0 * 10000^(-2i/D), and D, measured at two
d_model, is written as a law (d_model - 2, 2 d_model). Named only when the rebuilt table equals the candidate's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from conformance.diagnosis.measurements.base import Knob, measurement

LAYOUTS = ("interleaved", "interleaved, cosine first", "halves", "halves, cosine first")
LAYOUT_TEXT = {"interleaved": "sine in column 2i, cosine in 2i + 1",
               "interleaved, cosine first": "cosine in column 2i, sine in 2i + 1 (sine and cosine swapped)",
               "halves": "sines in the first half of the columns, cosines in the second (halves concatenated)",
               "halves, cosine first": "cosines in the first half of the columns, sines in the second"}
LN_BASE = math.log(10000.0)
SIZES = ((48, 16), (48, 32))  # (positions, d_model) of the two tables read


@dataclass(frozen=True)
class PositionalTable:
    layout: str
    offset: float  # positions o, o + 1, ... (the paper: 0)
    law: tuple[str, float]  # D as ("plus", delta): d_model + delta, or ("times", m): m d_model
    omega0: float = 1.0
    amplitude: float = 1.0

    def denominator(self, d_model: int) -> float:
        kind, value = self.law
        return d_model + value if kind == "plus" else d_model * value

    def frequencies(self, d_model: int) -> np.ndarray:
        i = np.arange(d_model // 2, dtype=np.float64)
        D = self.denominator(d_model)
        exponent = np.where(i == 0, 0.0, -2.0 * i * LN_BASE / (D if D else 1.0))
        return self.omega0 * np.exp(exponent)

    def interleave(self, angles):
        s, c = self.amplitude * np.sin(angles), self.amplitude * np.cos(angles)
        first, second = (c, s) if self.layout.endswith("cosine first") else (s, c)
        if self.layout.startswith("halves"):
            return np.concatenate([first, second], axis=1)
        return np.stack([first, second], axis=-1).reshape(angles.shape[0], -1)

    def table(self, n: int, d_model: int) -> np.ndarray:
        positions = np.arange(n, dtype=np.float64) + self.offset
        return self.interleave(np.outer(positions, self.frequencies(d_model)))


def _split(table: np.ndarray, layout: str) -> tuple[np.ndarray, np.ndarray]:
    half = table.shape[1] // 2
    if layout.startswith("halves"):
        first, second = table[:, :half], table[:, half:]
    else:
        first, second = table[:, 0::2], table[:, 1::2]
    return (second, first) if layout.endswith("cosine first") else (first, second)


def _pairs(table: np.ndarray, layout: str):
    """(amplitude, omega (half,), phase (half,)) when every pair of ``layout`` is a sinusoid of the position."""
    s, c = _split(table, layout)
    radius = np.hypot(s, c)
    amplitude = float(radius.mean())
    if amplitude == 0 or np.abs(radius - amplitude).max() > 1e-3 * amplitude:
        return None
    angles = np.unwrap(np.arctan2(s, c), axis=0)
    positions = np.arange(table.shape[0], dtype=np.float64)
    design = np.stack([positions, np.ones_like(positions)], axis=1)
    (omega, phase), *_ = np.linalg.lstsq(design, angles, rcond=None)
    if np.abs(design @ np.stack([omega, phase]) - angles).max() > 1e-3:
        return None
    return amplitude, omega, phase


def _offset(omega: np.ndarray, phase: np.ndarray) -> float | None:
    """The o with phase_i = omega_i o (mod 2 pi) for every pair, read off the fastest pair."""
    best = None
    for k in range(-2, 3):
        o = (phase[0] + 2 * math.pi * k) / omega[0]
        wrapped = np.angle(np.exp(1j * (phase - omega * o)))
        err = float(np.abs(wrapped).max())
        if best is None or err < best[0]:
            best = (err, o)
    if best is None or best[0] > 1e-2:
        return None
    o = best[1]
    return float(round(o)) if abs(o - round(o)) < 1e-3 else o


def _denominator(omega: np.ndarray) -> tuple[float, float] | None:
    """(omega_0, D) with omega_i = omega_0 10000^(-2i/D)."""
    if (omega <= 0).any():
        return None
    i = np.arange(len(omega), dtype=np.float64)
    if len(omega) < 2:
        return None
    slope, intercept = np.polyfit(i, np.log(omega), 1)
    if np.abs(intercept + slope * i - np.log(omega)).max() > 1e-2 or slope >= 0:
        return None
    return float(math.exp(intercept)), float(-2 * LN_BASE / slope)


def _law(points: list[tuple[int, float]]) -> tuple[str, float] | None:
    """D as a law of d_model from (d_model, D) at two sizes: d_model + delta, or m d_model."""
    (d1, D1), (d2, D2) = points
    delta1, delta2 = D1 - d1, D2 - d2
    if abs(delta1 - delta2) < 0.05 and abs(delta1 - round(delta1)) < 0.05:
        return "plus", float(round(delta1))
    m1, m2 = D1 / d1, D2 / d2
    if abs(m1 - m2) < 1e-3 * m1:
        return "times", float(f"{(m1 + m2) / 2:.6g}")
    return None


def fit_table(candidate) -> PositionalTable | None:
    tables = {d: np.asarray(candidate.positional_encoding(n, d), np.float64) for n, d in SIZES}
    for layout in LAYOUTS:
        fitted = [_pairs(table, layout) for table in tables.values()]
        if any(f is None for f in fitted):
            continue
        offsets = [_offset(omega, phase) for _, omega, phase in fitted]
        denominators = [_denominator(omega) for _, omega, _ in fitted]
        if any(o is None for o in offsets) or any(d is None for d in denominators):
            continue
        if abs(offsets[0] - offsets[1]) > 1e-3 or abs(denominators[0][0] - denominators[1][0]) > 1e-3:
            continue
        law = _law([(d, D) for d, (_, D) in zip(tables, denominators, strict=True)])
        if law is None:
            continue
        omega0 = denominators[0][0]
        fit = PositionalTable(layout, offsets[0], law, 1.0 if abs(omega0 - 1) < 1e-4 else omega0,
                              1.0 if abs(fitted[0][0] - 1) < 1e-4 else round(fitted[0][0], 4))
        if all(np.abs(fit.table(n, d) - tables[d]).max() <= 1e-4 for n, d in SIZES):
            return fit
    return None


def _frequency_text(fit: PositionalTable) -> str | None:
    kind, value = fit.law
    if (kind, value) == ("plus", 0.0) and fit.omega0 == 1.0:
        return None
    base = 10000.0 ** (1 / value) if kind == "times" else None
    if (kind, value) == ("times", 2.0):
        law = "10000^(-i/d_model)"
    elif base is not None and abs(base - round(base)) < 1e-3 * base:
        law = f"{round(base):g}^(-2i/d_model): the base {round(base):g} instead of 10000"
    elif kind == "plus" and value == 0:
        law = "10000^(-2i/d_model)"
    elif kind == "plus":
        law = f"10000^(-2i/(d_model {'+' if value > 0 else '-'} {abs(value):g}))"
    else:
        law = f"10000^(-2i/({value:g} d_model))"
    scaled = "" if fit.omega0 == 1.0 else f"{fit.omega0:.4g} * "
    return f"frequencies omega_i = {scaled}{law} (paper: 10000^(-2i/d_model))"


@measurement("positional_table", "refit", ("positional_encoding",),
             "sine and cosine swapped / halves concatenated; positions counted from <o>; frequencies"
             " 10000^(-2i/(d_model - 2)), 10000^(-i/d_model); the table scaled by <A>")
def positional_table(candidate):
    fit = fit_table(candidate)
    if fit is None:
        return []
    parts, facts = [], {}
    if fit.layout != "interleaved":
        parts.append(LAYOUT_TEXT[fit.layout])
        facts["layout"] = fit.layout
    if fit.offset != 0:
        parts.append(f"positions counted from {fit.offset:g} (paper: from 0)")
        facts["offset"] = fit.offset
    frequencies = _frequency_text(fit)
    if frequencies:
        parts.append(frequencies)
        facts["denominator"] = list(fit.law)
    if fit.amplitude != 1.0:
        parts.append(f"every value multiplied by {fit.amplitude:g}")
        facts["amplitude"] = fit.amplitude
    if not parts:
        return []
    key = "positional_table:" + ",".join(f"{k}={v}" for k, v in sorted(facts.items()))
    return [Knob("positional_table", fit, "positional table refitted from the candidate's: " + "; ".join(parts), key,
                 facts)]
