"""§5.3 Optimizer: lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5), steps from 1.

The lesson ("The original transformer, step by step", Step 6) prints the paper's table (d_model 512,
warmup 4,000) and the toy's values (d_model 64, warmup 400); the toy's training log prints the rate
of the *next* step, lrate(step + 1), because it reads the optimizer after sched.step().
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.diagnosis import Question
from conformance.errors import ConformanceOutcome
from conformance.judging.check import Holds
from conformance.paper import claims, published
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


def rates(candidate, points) -> np.ndarray:
    """lrate at each (step, d_model, warmup) of ``points``: the question every schedule check asks."""
    return np.array([candidate.learning_rate(step, d_model, warmup) for step, d_model, warmup in points])


# A second problem to confirm a match: warm-up and decay, two model sizes, two warmups, steps that no
# published table has (a single number at step 1 cannot tell 2 x lrate from lrate(step + 1)).
PROBE = ((1, 64, 400), (37, 64, 400), (399, 64, 400), (400, 64, 400), (1234, 64, 400), (3, 512, 4000),
         (2500, 512, 4000), (90000, 512, 4000))


def rates_question(points) -> Question:
    return Question(rates, tuple(points), probe=PROBE, tol=FORMULA)


def assert_rates(candidate, check, table, d_model, warmup, *, shift=0):
    points = [(step + shift, d_model, warmup) for step in table]
    for (step, fact_id), got in zip(table.items(), rates(candidate, points), strict=True):
        check.close(got, check.published(fact_id), published.tolerance(fact_id),
                    what=f"lrate(step={step + shift}, d_model={d_model}, warmup={warmup}) [{fact_id}]",
                    ask=rates_question(points))


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
    check.close(got, lrate(step, d_model, warmup), FORMULA, what=f"lrate(step={step}, d_model={d_model},"
                f" warmup={warmup})", ask=rates_question([(step, d_model, warmup)]))


@claims.LEARNING_RATE
@given(d_model=st.sampled_from([64, 512]), warmup=st.integers(2, 5000))
def test_lrate_rises_linearly_then_decays_from_the_peak_at_warmup(candidate, check, d_model, warmup):
    """The rate grows in a straight line up to step = warmup, its maximum, then falls as 1/sqrt(step)."""
    steps = (1, warmup - 1, warmup, warmup + 1, 4 * warmup)
    at = dict(zip(steps, rates(candidate, [(step, d_model, warmup) for step in steps]), strict=True))
    ask = rates_question([(step, d_model, warmup) for step in steps])
    check.close(at[warmup - 1] / at[1], warmup - 1, FORMULA, what=f"lrate({warmup - 1}) / lrate(1)", ask=ask)
    check.close(at[warmup], max(at.values()), FORMULA, what=f"lrate(warmup={warmup}) is the maximum", ask=ask)
    check.close(at[4 * warmup] / at[warmup], 0.5, FORMULA, what="lrate(4 * warmup) / lrate(warmup): 1/sqrt(4)",
                ask=ask)


OWNED = {*PAPER_TABLE.values(), *PAPER_CHART.values(), *TOY_VALUES.values(), *TOY_LOG.values()}


# -- Every other printed rate: each fact has one home, the checks above own theirs
@claims.LEARNING_RATE
@pytest.mark.requires("learning_rate")
def test_published_learning_rates(candidate, check):
    """Every other printed rate: the chart's, the recap's, the listing's lines, the practice's logged rate."""
    pairs = []
    logged = published.of_kind("lambdalr_log")  # the log prints the next step's rate
    for shift, entries in ((0, published.of_kind("lrate")), (1, logged)):
        for entry in (e for e in entries if e["id"] not in OWNED):
            a = entry["args"]
            step = a["step"] + shift
            pairs.append((entry["id"], candidate.learning_rate(step, a.get("d_model", 512), a.get("warmup", 4000))))
    for fact_id in published.listing_lines("lrate table"):  # each line: step, lrate(step, 512, 4000)
        step = published.fact(fact_id)["value"][0]
        pairs.append((fact_id, [step, candidate.learning_rate(step, 512, 4000)]))
    pairs += hand_checks(candidate, 512, 4000, "lrate.paper") + hand_checks(candidate, 64, 400, "practice.lrate")
    pairs += guided_practice_answer(candidate)
    # a whole number of the hand checks (40, 8,000) is read back through the candidate's float32 rates
    check.published_values(pairs, what="§5.3 lrate", floor=FORMULA)


def d_model_factor(candidate, d_model: int) -> float:
    """d_model^-0.5, read off the candidate as lrate(1) with warmup 1, where both terms of the min are 1."""
    return candidate.learning_rate(1, d_model, 1)


def hand_checks(candidate, d_model: int, warmup: int, prefix: str) -> list[tuple]:
    """The factors of Step 6's and the practice's hand checks, read off the candidate's rates: d_model^-0.5, and for
    the paper's schedule warmup^-0.5 (the peak over the d_model factor), the peak itself, and where it is."""
    factor = d_model_factor(candidate, d_model)
    if prefix == "practice.lrate":
        return [(f"{prefix}.d_factor", factor)]
    peak = candidate.learning_rate(warmup, d_model, warmup)
    return [(f"{prefix}.d_factor", factor), (f"{prefix}.warmup_factor", peak / factor),
            (f"{prefix}.peak.hand_product", peak), ("lrate.peak_at_warmup", highest_step(candidate, d_model, warmup))]


# Steps around the peak and across the paper's 100,000: where the candidate's rate is highest among them.
PEAK_SEARCH = (1, 100, 1000, 3000, 3999, 4000, 4001, 5000, 10000, 40000, 100000)


def highest_step(candidate, d_model: int, warmup: int) -> int:
    return max(PEAK_SEARCH, key=lambda step: candidate.learning_rate(step, d_model, warmup))


def guided_practice_answer(candidate) -> list[tuple]:
    """Answer 5's arithmetic on the toy schedule (d_model 64, warmup 400), each number read off the candidate's rates:
    64^-0.5 x 100 x 400^-1.5 = 0.125 x 100 / 8,000 in the warmup; 0.125 x 1,600^-0.5 = 0.125 / 40, half the peak,
    because 1,600 = 4 x 400."""
    rate = lambda step: candidate.learning_rate(step, 64, 400)  # noqa: E731
    factor, peak = d_model_factor(candidate, 64), rate(400)
    linear = Holds(bool(abs(rate(100) - 100 * rate(1)) <= FORMULA.rtol * rate(100)),
                   f"lrate(100) = {rate(100):.6g}, 100 x lrate(1) = {100 * rate(1):.6g}")
    return [
        ("practice.lrate.step100.in_warmup", linear),  # the warmup's straight line: 100 steps, 100 times step 1's rate
        ("practice.lrate.warmup_power", 100 * factor / rate(100)),
        ("practice.lrate.sqrt1600", factor / rate(1600)),
        ("practice.lrate.half_peak", rate(1600) / peak),
        ("practice.lrate.four_warmups", first_step_at_most(rate, peak / 2, 400, 100000)),
    ]


def first_step_at_most(rate, level: float, lo: int, hi: int) -> int:
    """The first step after ``lo`` whose rate is at most ``level`` (bisection: the rate decays after the peak ``lo``);
    ``hi`` + 1 when none up to ``hi`` is."""
    level *= 1 + FORMULA.rtol  # a rate on the level in float arithmetic counts as on it
    if rate(hi) > level:
        return hi + 1
    while hi - lo > 1:
        middle = (lo + hi) // 2
        lo, hi = (lo, middle) if rate(middle) <= level else (middle, hi)
    return hi
