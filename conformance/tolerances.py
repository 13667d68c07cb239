"""Tolerances are data with a reason: every comparison names its (rtol, atol) and why.

The per-dtype defaults follow torch.testing.assert_close (PyTorch PR #32538 set float32 to
rtol 1.3e-6, atol 1e-5 and float64 to 1e-7, 1e-7), widened by the error a composite accumulates: the
reference itself, run in float32 against float64, differs by that much (``benchmarks/`` prints it).
Published numbers get the half unit of their last printed digit: a value printed as 0.841 stands for
anything in [0.8405, 0.8415].

Half precision (float16, bfloat16) is measured in its unit roundoff u (``UNIT_ROUNDOFF``: 2^-11 and 2^-8, half an
ulp at 1): every value an implementation holds in that dtype is off by up to u relative, its inputs and weights
included, so a check's tolerance is u times how many such roundings its answer accumulates (``half``): 2 for one
operation (its inputs' rounding and its result's; torch.testing's float16 rtol 1e-3 is 2u), more for a layer and
a model, each factor set from the reference's own worst error over drawn problems (docs/half-precision.md).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Tolerance:
    """Allowed |actual - expected| <= atol + rtol * |expected|, elementwise, with its justification."""

    rtol: float
    atol: float
    reason: str

    def allowed(self, expected_abs):
        return self.atol + self.rtol * expected_abs

    def as_dict(self) -> dict:
        return asdict(self)


# Half a unit in the last place at 1 (2^-p for a p-bit significand): the most one rounding to the dtype changes a value,
# relatively.
UNIT_ROUNDOFF = {"float64": 2.0**-53, "float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}
HALF = ("float16", "bfloat16")
# The largest finite number of each dtype: beyond it, a value is inf (float16's is e^11.1; bfloat16 keeps float32's
# exponent and so its range).
LARGEST = {"float64": 1.7976931348623157e308, "float32": 3.4028234663852886e38, "float16": 65504.0,
           "bfloat16": 3.3895313892515355e38}


def half(roundings: int, what: str) -> dict[str, Tolerance]:
    """rtol = atol = ``roundings`` x u for each half dtype: values of order 1, each rounding off by at most u."""
    return {dtype: Tolerance(roundings * UNIT_ROUNDOFF[dtype], roundings * UNIT_ROUNDOFF[dtype],
                             f"{dtype} {what}: {roundings} x u (u = 2^{int(math.log2(UNIT_ROUNDOFF[dtype]))})")
            for dtype in HALF}


# One elementwise operation (PE, LayerNorm, a softmax row): torch.testing's defaults for the dtype.
ELEMENTWISE = {
    "float32": Tolerance(1.3e-6, 1e-5, "float32 elementwise op (torch.testing default)"),
    "float64": Tolerance(1e-7, 1e-7, "float64 elementwise op (torch.testing default)"),
    **half(2, "elementwise op: its inputs' rounding and its result's"),
}

# A sublayer or a layer: a few matmuls of length d_model / d_ff, softmax and LayerNorm in float32.
# The reference's float32-vs-float64 gap on random weights stays under 1e-5; 1e-4 leaves a factor 10.
LAYER = {
    "float32": Tolerance(1e-4, 1e-4, "float32 layer: matmuls of length d_ff accumulate rounding"),
    "float64": Tolerance(1e-9, 1e-9, "float64 layer: matmuls of length d_ff accumulate rounding"),
    **half(32, "layer: inputs, weights, scores, softmax, hidden units and the residual sum each rounded"),
}

# A whole model (2 x N layers, embedding, tied output projection): errors compound over layers.
MODEL = {
    "float32": Tolerance(1e-3, 1e-3, "float32 model: 2N post-norm layers compound rounding"),
    "float64": Tolerance(1e-8, 1e-8, "float64 model: 2N post-norm layers compound rounding"),
    **half(64, "model: 2N post-norm layers compound their roundings"),
}


# A value exactly on a rounding boundary (lrate(2) = 3.125e-05, printed 3.13e-05) sits at margin 1; the
# candidate's own float rounding may push it a hair past, so allow a relative float error on top.
# In half precision, the value's own rounding to the dtype and its inputs' (2u).
FLOAT_RTOL = {"float32": 2e-6, "float64": 1e-12, **{dtype: 2 * UNIT_ROUNDOFF[dtype] for dtype in HALF}}


def printed(decimals: int, *, computed_in: str = "float32") -> Tolerance:
    """Half a unit in the last printed place, plus the computation's own float error."""
    return Tolerance(FLOAT_RTOL.get(computed_in, 2e-6), 0.5 * 10.0**-decimals,
                     f"printed to {decimals} decimals, plus {computed_in} rounding")


def printed_significant(significant: int, magnitude: float, *, computed_in: str = "float32") -> Tolerance:
    """Half a unit in the last of ``significant`` printed digits of a value of this magnitude."""
    exponent = int(math.floor(math.log10(magnitude))) - significant + 1
    return Tolerance(FLOAT_RTOL.get(computed_in, 2e-6), 0.5 * 10.0**exponent,
                     f"printed to {significant} significant digits, plus {computed_in} rounding")


def for_dtype(table: dict[str, Tolerance], dtype: str) -> Tolerance:
    return table.get(dtype, table["float32"])


def visible(table: dict[str, Tolerance], candidate) -> Tolerance:
    """The unit of a change a check requires to see (a perturbation that must reach an output moves it > 10 of
    these): the candidate's tolerance, but float32's in half precision, where a wiring moves an output as far as
    in float32 while a tolerance of many u would ask the perturbation to move it further than it can."""
    dtype = candidate.conventions.dtype
    return for_dtype(table, "float32" if dtype in HALF else dtype)


def for_candidate(table: dict[str, Tolerance], candidate) -> Tolerance:
    """The table's tolerance for the dtype the candidate declares it computes in."""
    return for_dtype(table, candidate.conventions.dtype)
