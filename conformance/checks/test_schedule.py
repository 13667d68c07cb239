"""§5.3 Optimizer: lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5), steps from 1.

The lesson ("The original transformer, step by step", Step 6) prints the paper's table (d_model 512,
warmup 4,000) and the toy's values (d_model 64, warmup 400); the toy's training log prints the rate
of the *next* step, lrate(step + 1), because it reads the optimizer after sched.step().
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance import claims, published
from conformance.errors import ConformanceOutcome
from conformance.tolerances import Tolerance

SECTION = "§5.3 Optimizer: learning-rate schedule"
pytestmark = pytest.mark.requires("learning_rate")

PAPER_TABLE = {
    1: "lrate.paper.step1",
    100: "lrate.paper.step100",
    1000: "lrate.paper.step1000",
    4000: "lrate.paper.step4000",
    10000: "lrate.paper.step10000",
    100000: "lrate.paper.step100000",
}
PAPER_CHART = {4000: "lrate.paper.peak", 40000: "lrate.chart.step40000"}
TOY_VALUES = {100: "practice.lrate.step100", 400: "toy_run.peak_lrate", 1600: "practice.lrate.step1600"}
TOY_LOG = {
    1: "toy_run.log.step1.lr",
    500: "toy_run.log.step500.lr",
    1000: "toy_run.log.step1000.lr",
    2000: "toy_run.log.step2000.lr",
    3000: "toy_run.log.step3000.lr",
}
# A float64 formula evaluated in float64 or float32: relative error ~1e-7 at most.
FORMULA = Tolerance(1e-6, 0.0, "a closed-form scalar, float32 at worst")


def lrate(step, d_model, warmup):
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def alternatives(step, d_model, warmup) -> dict[str, float]:
    return {
        "max instead of min (no decay after warmup, or no warmup)": d_model**-0.5
        * max(step**-0.5, step * warmup**-1.5),
        "off by one: lrate(step + 1)": lrate(step + 1, d_model, warmup),
        "off by one: lrate(step - 1)": lrate(max(step - 1, 1), d_model, warmup) if step > 1 else float("nan"),
        "warmup exponent -1 instead of -1.5": d_model**-0.5 * min(step**-0.5, step * warmup**-1.0),
        "no warmup: d_model^-0.5 * step^-0.5": d_model**-0.5 * step**-0.5,
        "d_model^-1 instead of d_model^-0.5": d_model**-1.0 * min(step**-0.5, step * warmup**-1.5),
    }


def assert_rates(candidate, check, table, d_model, warmup, *, shift=0):
    for step, fact_id in table.items():
        got = candidate.learning_rate(step + shift, d_model, warmup)
        check.close(
            got,
            published.value(fact_id),
            published.tolerance(fact_id),
            what=f"lrate(step={step + shift}, d_model={d_model}, warmup={warmup}) [{fact_id}]",
            alternatives=alternatives(step + shift, d_model, warmup),
            rerun=lambda other, s=step + shift: other.learning_rate(s, d_model, warmup),
        )


@claims.LEARNING_RATE
def test_lrate_matches_published_paper_table(candidate, check):
    """d_model 512, warmup 4,000: 1.747e-07 at step 1 ... 6.988e-04 at 4,000 ... 1.398e-04 at 100,000."""
    record_curve(candidate, check, 512, 4000, {**PAPER_TABLE, **PAPER_CHART})
    assert_rates(candidate, check, PAPER_TABLE, 512, 4000)
    assert_rates(candidate, check, PAPER_CHART, 512, 4000)


# The report's picture of the schedule: dense over the warmup, sparser over the decay (reports/figures.py).
CURVE_STEPS = sorted({*np.linspace(1, 8000, 81).astype(int).tolist(), *range(8000, 100001, 1000)})


def record_curve(candidate, check, d_model: int, warmup: int, published_points: dict[int, str]) -> None:
    """The candidate's rate at CURVE_STEPS beside the formula's and the published points, recorded before
    any comparison so that a failing schedule has its picture; an adapter error leaves it out (the
    comparisons that follow report it)."""
    try:
        rates = [float(candidate.learning_rate(s, d_model, warmup)) for s in CURVE_STEPS]
    except (ConformanceOutcome, TypeError, ValueError):
        return
    check.record("schedule", {
        "d_model": d_model, "warmup": warmup, "step": CURVE_STEPS, "candidate": rates,
        "formula": [lrate(s, d_model, warmup) for s in CURVE_STEPS],
        "published": [{"step": s, "value": published.fact(f)["value"], "fact": f} for s, f in published_points.items()],
    })


@claims.LEARNING_RATE
def test_lrate_matches_published_toy_values(candidate, check):
    """d_model 64, warmup 400: 0.00156 at step 100, the peak 0.00625 at 400, 0.003125 at 1,600."""
    assert_rates(candidate, check, TOY_VALUES, 64, 400)


@claims.LEARNING_RATE_LOGGED
def test_lrate_matches_the_toy_training_log(candidate, check):
    """The log's lr column (3.13e-05 at step 1, ..., 2.28e-03 at 3,000) is lrate(step + 1): the next step's."""
    assert_rates(candidate, check, TOY_LOG, 64, 400, shift=1)


@claims.LEARNING_RATE
@given(step=st.integers(1, 10**6), d_model=st.sampled_from([16, 64, 256, 512, 1024]), warmup=st.integers(1, 20000))
def test_lrate_matches_formula_for_any_step(candidate, check, step, d_model, warmup):
    """For any step, d_model and warmup, lrate follows the formula (the published tables' twin)."""
    got = candidate.learning_rate(step, d_model, warmup)
    check.close(
        got,
        lrate(step, d_model, warmup),
        FORMULA,
        what=f"lrate(step={step}, d_model={d_model}, warmup={warmup})",
        alternatives=alternatives(step, d_model, warmup),
        rerun=lambda other: other.learning_rate(step, d_model, warmup),
    )


@claims.LEARNING_RATE
@given(d_model=st.sampled_from([64, 512]), warmup=st.integers(2, 5000))
def test_lrate_rises_linearly_then_decays_from_the_peak_at_warmup(candidate, check, d_model, warmup):
    """The rate grows in a straight line up to step = warmup, its maximum, then falls as 1/sqrt(step)."""
    at = {s: candidate.learning_rate(s, d_model, warmup) for s in (1, warmup - 1, warmup, warmup + 1, 4 * warmup)}
    check.close(at[warmup - 1] / at[1], warmup - 1, FORMULA, what=f"lrate({warmup - 1}) / lrate(1)")
    check.close(at[warmup], max(at.values()), FORMULA, what=f"lrate(warmup={warmup}) is the maximum")
    check.close(at[4 * warmup] / at[warmup], 0.5, FORMULA, what="lrate(4 * warmup) / lrate(warmup): 1/sqrt(4)")
