"""Which checks a half-precision run runs, and what its tolerances and kill matrix are made of (docs/half-precision.md).

The hazard checks run only with ``--dtype float16|bfloat16`` (a float32 run is the run it was); the Adam update
comparison does not run there (the reference's own bfloat16 noise is ten times the nearest wrong recipe's distance).
A NaN in a hazard check fails it, and the diagnosis names the known bug that puts its NaN in the same places.
"""

from __future__ import annotations

import pytest

from conformance.cli import EXIT_NOTHING_RAN
from conformance.run import killmatrix
from conformance.tolerances import LAYER, MODEL, UNIT_ROUNDOFF, Tolerance, for_dtype

HAZARD = "masked_weights_stay_zero_at_trained_score_magnitudes"


def test_a_float32_run_collects_no_hazard_check(certify):
    run = certify("reference", "--no-training", "-k", HAZARD)
    assert run.code == EXIT_NOTHING_RAN, run.out  # removing the half_precision deselection makes it run (and pass)


def test_a_half_run_runs_the_hazard_checks_and_no_adam_update_comparison(certify):
    run = certify("reference", "--dtype", "bfloat16", "-k", f"{HAZARD} or adam_steps_match_reference")
    assert run.report is not None, run.err
    assert run.statuses() == {HAZARD: "passed"}  # adam_steps_match_reference is full_precision: not collected


def test_an_overflow_fails_the_hazard_check_and_is_named_by_where_its_nan_lie(certify):
    run = certify("mutant:half_scale_after_overflowing_matmul", "--dtype", "float16",
                  "-k", "scaled_scores_survive_dot_products_beyond_the_dtype")
    check = run.report["checks"][0]
    assert check["status"] == "failed"  # not an error: the NaN is the hazard itself
    assert "not finite" in check["message"]
    assert "the largest float16 number is 65,504" in check["message"]  # the threshold of the dtype that ran
    assert [d["mutant"] for d in check["diagnosis"]] == ["half_scale_after_overflowing_matmul"]
    assert "--dtype float16" in check["reproduction"]


def test_an_answer_that_is_nan_everywhere_names_no_bug(certify):
    """The additive mask built in float16 makes every score NaN: every collapsing bug collapses so."""
    run = certify("mutant:half_additive_mask_built_in_dtype", "--dtype", "float16", "-k", HAZARD)
    check = run.report["checks"][0]
    assert check["status"] == "failed"
    assert check["diagnosis"] == []


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_tolerances_count_roundings_of_the_dtype(dtype):
    u = UNIT_ROUNDOFF[dtype]
    assert for_dtype(LAYER, dtype) == Tolerance(32 * u, 32 * u, for_dtype(LAYER, dtype).reason)
    assert for_dtype(MODEL, dtype).atol == 64 * u
    assert "u = 2^" in for_dtype(MODEL, dtype).reason


def test_the_float32_kill_matrix_leaves_out_the_bugs_float32_does_not_show():
    float32 = {row.name for row in killmatrix.catalogue()}
    assert "half_scale_after_overflowing_matmul" not in float32  # faithful in float32: not a survivor there
    assert "half_softmax_without_max_subtraction" in float32  # e^s overflows float32 too, above 88.7
    float16 = {row.name: row for row in killmatrix.catalogue("float16")}
    bfloat16 = {row.name for row in killmatrix.catalogue("bfloat16")}
    assert set(float16) == {name for name in float16 if name.startswith("half_")} and len(float16) == 8
    assert "half_scale_after_overflowing_matmul" not in bfloat16  # bfloat16 has float32's range
    assert float16["half_scale_after_overflowing_matmul"].expected == {
        "scaled_scores_survive_dot_products_beyond_the_dtype"}
