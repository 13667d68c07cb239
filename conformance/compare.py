"""Comparing arrays: attributes first, then values with statistics and the margin.

Modelled on torch.testing.assert_close (shape and dtype first, then the mismatch count and the
greatest absolute and relative difference at an index) and numpy.testing (ACTUAL / DESIRED excerpts).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from conformance.errors import CheckFailure
from conformance.tolerances import Tolerance


@dataclass
class Measurement:
    """How far ``actual`` is from ``expected``; ``margin`` = worst error / allowed error (<= 1 passes)."""

    what: str
    max_abs: float
    max_rel: float
    margin: float
    index: tuple[int, ...]
    mismatched: int
    total: int
    tolerance: Tolerance

    @property
    def passed(self) -> bool:
        return self.mismatched == 0

    def as_dict(self) -> dict:
        data = asdict(self)
        data["tolerance"] = self.tolerance.as_dict()
        data["index"] = list(self.index)
        return data


def measure(actual, expected, tol: Tolerance, *, what: str = "output") -> Measurement:
    """Elementwise |actual - expected| against ``tol``. NaN on either side is a mismatch: a NaN expected
    value (a mutant's NaN output, a broken golden) matches nothing, not everything."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    diff = np.abs(actual - expected)
    diff = np.where(np.isnan(diff), np.inf, diff)
    allowed = np.where(np.isnan(expected), 0.0, tol.allowed(np.abs(expected)))
    with np.errstate(divide="ignore", invalid="ignore"):  # an exact tolerance: 0/0 is a perfect match
        ratio = np.where(diff == 0, 0.0, diff / allowed) if diff.size else np.zeros(0)
    worst = np.unravel_index(int(np.argmax(ratio)), ratio.shape) if diff.size else ()
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(expected != 0, diff / np.abs(expected), np.where(diff == 0, 0.0, np.inf))
    return Measurement(
        what=what,
        max_abs=float(diff.max()) if diff.size else 0.0,
        max_rel=float(rel.max()) if diff.size else 0.0,
        margin=float(ratio.max()) if diff.size else 0.0,
        index=tuple(int(i) for i in worst),
        mismatched=int((diff > allowed).sum()),
        total=int(diff.size),
        tolerance=tol,
    )


def fmt_array(values, *, limit: int = 8) -> str:
    """A short excerpt: the first ``limit`` values, 4 significant digits."""
    flat = np.asarray(values).ravel()
    shown = ", ".join(f"{v:.4g}" if isinstance(v, float | np.floating) else str(v) for v in flat[:limit])
    more = f", ... ({flat.size} values)" if flat.size > limit else ""
    return f"[{shown}{more}]"


def fmt_tolerance(tol: Tolerance) -> str:
    return f"atol {tol.atol:.3g} + rtol {tol.rtol:.3g}*|expected| ({tol.reason})"


# The report's difference heatmap (reports/figures.py) shows at most this window of a failing tensor.
DIFFERENCE_WINDOW = (32, 64)


def difference_window(actual, expected, index, tol: Tolerance) -> dict | None:
    """The signed difference actual - expected on the 2-D slice of the last two axes through the worst
    ``index``, cut to at most ``DIFFERENCE_WINDOW`` around it; None for a single value.

    ``{"shape", "slice", "rows", "cols", "values", "worst", "allowed"}``: ``slice`` is the index of the
    slice with None on the two axes shown, ``rows``/``cols`` the half-open ranges shown, ``worst`` the
    worst index within the window, ``allowed`` the tolerance there; a NaN difference is null.
    """
    diff = np.asarray(actual, dtype=np.float64) - np.asarray(expected, dtype=np.float64)
    if diff.size < 2:
        return None
    plane = diff.reshape(1, -1) if diff.ndim < 2 else diff[tuple(index[:-2])]
    worst = (0, index[-1]) if diff.ndim == 1 else (index[-2], index[-1])
    rows = _around(worst[0], plane.shape[0], DIFFERENCE_WINDOW[0])
    cols = _around(worst[1], plane.shape[1], DIFFERENCE_WINDOW[1])
    window = plane[rows[0]:rows[1], cols[0]:cols[1]]
    return {
        "shape": list(diff.shape),
        "slice": [*index[:-2], None, None] if diff.ndim >= 2 else [None],
        "rows": list(rows),
        "cols": list(cols),
        "values": [[float(f"{v:.4g}") if np.isfinite(v) else None for v in row] for row in window],
        "worst": [worst[0] - rows[0], worst[1] - cols[0]],
        "allowed": float(tol.allowed(np.abs(np.asarray(expected, dtype=np.float64)[tuple(index)]))),
    }


def _around(center: int, length: int, size: int) -> tuple[int, int]:
    start = min(max(center - size // 2, 0), max(length - size, 0))
    return start, min(start + size, length)


def shape_cause(got: tuple[int, ...], expected: tuple[int, ...]) -> str | None:
    """The layout mistake a wrong shape shows, when it is one of the usual ones; None otherwise."""
    got, expected = tuple(got), tuple(expected)
    swap_first = expected[1::-1] + expected[2:] if len(expected) >= 2 else None
    if len(got) >= 2 and got != expected and got == swap_first:
        return ("sequence-first output (length, batch, ...) where the protocol is batch-first (batch, length, ...):"
                " transpose the first two axes, or declare Conventions(batch_first=False)")
    if len(got) >= 2 and got != expected and got == expected[:-2] + expected[:-3:-1]:
        return "the last two axes swapped: (..., keys, queries) instead of (..., queries, keys)? transpose them"
    if len(expected) == 4 and got == expected[:1] + expected[2:]:
        return "one map where one per head was expected: the weights averaged (or summed) over the heads?"
    return None


def assert_shape(actual, expected_shape: tuple[int, ...], *, what: str) -> None:
    __tracebackhide__ = True
    shape = tuple(np.shape(actual))
    if shape != tuple(expected_shape):
        cause = shape_cause(shape, expected_shape)
        raise CheckFailure(
            f"{what}.shape={shape}, but should be {tuple(expected_shape)}"
            + (f". Likely cause: {cause}" if cause else ""),
            expected=str(tuple(expected_shape)),
            actual=str(shape),
            **({"likely_cause": cause} if cause else {}),
        )


def assert_close(actual, expected, tol: Tolerance, *, what: str) -> Measurement:
    """Raise ``CheckFailure`` unless every element is within ``tol``; return the measurement.

    Equivalent to ``np.testing.assert_allclose(actual, expected, rtol, atol)`` with a message that shows
    the worst index and the margin. Which known bug a failure is, is the diagnosis's to say
    (``conformance.judging.check``), once it is confirmed.
    """
    __tracebackhide__ = True
    assert_shape(actual, np.shape(expected), what=what)
    m = measure(actual, expected, tol, what=what)
    if m.passed:
        return m
    got, want = np.asarray(actual), np.asarray(expected)
    lines = [
        f"{what}: {m.mismatched} of {m.total} values outside tolerance",
        f"  worst at index {m.index}: got {got[m.index]:.6g}, expected {want[m.index]:.6g}",
        f"  max abs diff {m.max_abs:.3g}, max rel diff {m.max_rel:.3g}; allowed {fmt_tolerance(tol)};"
        f" margin {m.margin:.3g}x",
        f"  ACTUAL  {fmt_array(got)}",
        f"  DESIRED {fmt_array(want)}",
    ]
    raise CheckFailure(
        "\n".join(lines),
        expected=fmt_array(want),
        actual=fmt_array(got),
        index=list(m.index),
        max_abs=m.max_abs,
        max_rel=m.max_rel,
        tolerance=tol.as_dict(),
        margin=m.margin,
        difference=difference_window(got, want, m.index, tol),
    )


def assert_true(condition: bool, message: str, **fields) -> None:
    """A claim that is not a numeric comparison (a mask pattern, a stopping rule); ``check.claim`` also
    puts a failure to the catalogue of known bugs."""
    __tracebackhide__ = True
    if not condition:
        raise CheckFailure(message, **fields)
