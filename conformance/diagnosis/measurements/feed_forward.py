"""§3.3 read off the candidate's feed-forward network: position by position?, its activation, its inner size.

* Positions: one position of the input changed; the paper's FFN changes that position's output alone ("applied
  to each position separately and identically"). A candidate whose other positions move reads its neighbours:
  a finding, measured at two sizes, with the offsets it reads.
* The activation: with W1 and W2 identities (in the first d_model inner units) the FFN returns f(x) itself,
  tabulated on [-8, 8] and compared with the usual activations (ReLU, GELU, identity...), a leaky slope fitted.
* The inner size: the inner units beyond k switched off (their W1 columns and b1 zero) change nothing for a
  candidate that reads only k of them; k, measured at two d_ff, is a constant or a fraction of d_ff.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from conformance.diagnosis.measurements.base import Finding, Knob, measurement

_erf = np.vectorize(math.erf)


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


ACTIVATIONS = {
    "ReLU": lambda z: np.maximum(0.0, z),
    "identity (no non-linearity)": lambda z: z,
    "GELU": lambda z: 0.5 * z * (1 + _erf(z / math.sqrt(2))),
    "GELU (tanh approximation)": lambda z: 0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z**3))),
    "SiLU (swish)": lambda z: z * _sigmoid(z),
    "tanh": np.tanh,
    "sigmoid": _sigmoid,
    "softplus": lambda z: np.logaddexp(0.0, z),
    "ELU": lambda z: np.where(z > 0, z, np.expm1(np.minimum(z, 0))),
    "ReLU6": lambda z: np.clip(z, 0.0, 6.0),
    "squared ReLU": lambda z: np.maximum(0.0, z) ** 2,
}
GRID = np.linspace(-8, 8, 64)


@dataclass(frozen=True)
class Activation:
    name: str
    slope: float = 0.0  # a leaky ReLU's negative slope

    def __call__(self, z):
        if self.name == "leaky ReLU":
            return np.where(z > 0, z, self.slope * z)
        return ACTIVATIONS[self.name](z)


def _identity_weights(d: int, d_ff: int) -> dict:
    W1 = np.zeros((d, d_ff), np.float32)
    W1[:, :d] = np.eye(d)
    return {"W1": W1, "b1": np.zeros(d_ff, np.float32), "W2": W1.T.copy(), "b2": np.zeros(d, np.float32)}


def tabulated(candidate, d: int = 8) -> np.ndarray:
    """f on GRID, read through the candidate's FFN with identity weights (d_ff = 4 d)."""
    x = GRID.reshape(1, -1, d).astype(np.float32)
    out = candidate.feed_forward(x, _identity_weights(d, 4 * d))
    return np.asarray(out, np.float64).reshape(-1)


def identify(values: np.ndarray) -> Activation | None:
    tol = 1e-4 * max(1.0, float(np.abs(values).max()))
    for name, fn in ACTIVATIONS.items():
        if np.abs(fn(GRID) - values).max() <= tol:
            return Activation(name)
    negative = GRID < 0
    slope = float(np.mean(values[negative] / GRID[negative]))
    leaky = Activation("leaky ReLU", round(slope, 4))
    if 0 < slope < 1 and np.abs(leaky(GRID) - values).max() <= tol:
        return leaky
    return None


def _random_ffn(rng, d: int, d_ff: int) -> dict:
    shapes = {"W1": ((d, d_ff), d**-0.5), "b1": ((d_ff,), 0.5), "W2": ((d_ff, d), d_ff**-0.5), "b2": ((d,), 0.5)}
    return {name: rng.normal(0, scale, shape).astype(np.float32) for name, (shape, scale) in shapes.items()}


def positions_read(candidate, L: int, d: int, seed: int) -> set[int]:
    """The offsets t' - t of the output positions that move when input position t (the middle one) does."""
    rng = np.random.default_rng(seed)
    weights = _random_ffn(rng, d, 4 * d)
    x = rng.normal(0, 1, (1, L, d)).astype(np.float32)
    moved = x.copy()
    t = L // 2
    moved[0, t] += rng.normal(0, 1, d).astype(np.float32)
    before, after = (np.asarray(candidate.feed_forward(v, weights), np.float64) for v in (x, moved))
    changed = np.abs(after - before).max(-1)[0] > 1e-5 * max(1.0, float(np.abs(before).max()))
    return {int(p) - t for p in np.flatnonzero(changed)}


@measurement("ffn_positions", "probe", ("feed_forward",),
             "the feed-forward output at position t also changes when positions t<offsets> change")
def ffn_positions(candidate):
    first, second = positions_read(candidate, 5, 8, 11), positions_read(candidate, 7, 12, 12)
    if first == {0} or first != second or 0 not in first:
        return []
    others = ", ".join(f"t{o:+d}" for o in sorted(first) if o)
    return [Finding(f"the feed-forward output at position t also changes when the input at {others} changes (the"
                    " paper's FFN is applied to each position separately): measured at two sizes",
                    f"ffn_positions:{sorted(first)}", ("feed_forward",), {"offsets": sorted(first)})]


@measurement("activation", "refit", ("feed_forward",), "the activation is <GELU / identity / ...> (paper: ReLU)")
def activation(candidate):
    if positions_read(candidate, 5, 8, 11) != {0}:
        return []  # not position by position: an identity-weight table would mix the positions
    found = identify(tabulated(candidate))
    if found is None or found.name == "ReLU":
        return []
    name = found.name if found.name != "leaky ReLU" else f"a leaky ReLU of negative slope {found.slope:g}"
    return [Knob("activation", found, f"the feed-forward activation, tabulated on [-8, 8], is {name} (paper: ReLU)",
                 f"activation:{found.name}" + (f"={found.slope:g}" if found.slope else ""), {"activation": found.name})]


@dataclass(frozen=True)
class InnerUnits:
    kind: str  # "constant" or "fraction" of d_ff
    value: float

    def units(self, d_ff: int) -> int:
        return int(self.value) if self.kind == "constant" else int(round(self.value * d_ff))


def units_read(candidate, d: int, d_ff: int, seed: int) -> int:
    """The number k of leading inner units the candidate's FFN reads (d_ff for the paper's)."""
    rng = np.random.default_rng(seed)
    weights = _random_ffn(rng, d, d_ff)
    x = rng.normal(0, 1, (1, 4, d)).astype(np.float32)
    full = np.asarray(candidate.feed_forward(x, weights), np.float64)
    lo, hi = 1, d_ff  # the smallest k with the units from k on switched off and the output unchanged
    while lo < hi:
        mid = (lo + hi) // 2
        cut = dict(weights, W1=weights["W1"].copy(), b1=weights["b1"].copy())
        cut["W1"][:, mid:], cut["b1"][mid:] = 0, 0
        # the paper's FFN still adds relu(0) W2 = 0 for a switched-off unit: only a unit never read changes nothing
        same = np.abs(np.asarray(candidate.feed_forward(x, cut), np.float64) - full).max() <= 1e-6
        lo, hi = (lo, mid) if same else (mid + 1, hi)
    return lo


@measurement("ffn_inner", "refit", ("feed_forward",), "the FFN's inner size <k> instead of d_ff")
def ffn_inner(candidate):
    d = 8
    k1, k2 = units_read(candidate, d, 32, 21), units_read(candidate, d, 64, 22)
    if k1 == 32 and k2 == 64:
        return []
    law = InnerUnits("constant", k1) if k1 == k2 else InnerUnits("fraction", k1 / 32) if k2 == 2 * k1 else None
    if law is None:
        return []
    size = f"{k1}" if law.kind == "constant" else f"d_ff * {law.value:g}"
    return [Knob("ffn_inner", law, f"the feed-forward network reads only its first {size} inner units: its inner size"
                 f" is {size} instead of d_ff (measured with d_ff 32 and 64)", f"ffn_inner:{law.kind}={law.value:g}",
                 {"inner": size})]
