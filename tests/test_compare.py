"""The comparator's messages: attributes first, the worst index, the margin."""

import numpy as np
import pytest

from conformance.compare import assert_close, assert_true, measure
from conformance.errors import CheckFailure
from conformance.tolerances import ELEMENTWISE, Tolerance, printed

TOL = ELEMENTWISE["float32"]


def test_passing_comparison_reports_its_margin():
    m = assert_close(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 5e-6]), TOL, what="x")
    assert m.passed and m.margin == pytest.approx(5e-6 / (1e-5 + 1.3e-6 * 2.000005), rel=1e-6)


def test_failure_names_worst_index_errors_tolerance_and_excerpts():
    with pytest.raises(CheckFailure) as info:
        assert_close(np.array([[0.0, 1.0], [2.0, 3.5]]), np.array([[0.0, 1.0], [2.0, 3.0]]), TOL, what="out")
    message = str(info.value)
    assert "out: 1 of 4 values outside tolerance" in message
    assert "worst at index (1, 1): got 3.5, expected 3" in message
    assert "max abs diff 0.5" in message and "allowed atol 1e-05" in message
    assert info.value.fields["index"] == [1, 1] and info.value.fields["max_abs"] == pytest.approx(0.5)


def test_shape_mismatch_is_reported_before_values():
    with pytest.raises(CheckFailure, match=r"out.shape=\(2,\), but should be \(3,\)"):
        assert_close(np.zeros(2), np.zeros(3), TOL, what="out")


def test_nan_is_never_close():
    assert not measure(np.array([np.nan]), np.array([0.0]), TOL).passed


@pytest.mark.parametrize("actual", [0.0, 1e30, np.nan])
def test_nan_expected_value_matches_nothing(actual):
    """A NaN expected value (a mutant's NaN output) must not make ``allowed`` NaN, which would pass every comparison."""
    m = measure(np.array([1.0, actual]), np.array([1.0, np.nan]), TOL)
    assert not m.passed and m.mismatched == 1 and m.index == (1,)


def test_printed_tolerance_is_half_a_unit_of_the_last_digit():
    tol = printed(3)
    assert measure(np.array([0.8415]), np.array([0.841]), tol).passed
    assert not measure(np.array([0.8416]), np.array([0.841]), tol).passed


def test_assert_true_carries_its_fields():
    with pytest.raises(CheckFailure, match="leaked") as info:
        assert_true(False, "leaked", expected="0", actual="0.3")
    assert info.value.fields == {"expected": "0", "actual": "0.3"}


def test_tolerance_requires_a_reason():
    with pytest.raises(TypeError):
        Tolerance(1e-5, 1e-5)
