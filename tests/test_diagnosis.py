"""The diagnosis names a known bug only when the match holds on the failing problem and on a second one."""

import numpy as np
import pytest
from conftest import adapter_path

from conformance.diagnosis import Question, catalogue, confirmed_matches
from conformance.tolerances import Tolerance

TOL = Tolerance(0.0, 1e-9, "exact arithmetic")


class Scalar:
    """A stand-in candidate whose answer to the question is f(problem)."""

    def __init__(self, f):
        self.f = f

    def fit(self, problem):
        return problem

    def value(self, problem):
        return np.array([self.f(problem)], dtype=float)


def answer(candidate, problem):
    return candidate.value(problem)


@pytest.fixture
def known(monkeypatch):
    """A catalogue of three bugs and a paper: plus one, times two, and NaN."""
    bugs = {"plus_one": lambda p: p + 1, "times_two": lambda p: 2 * p, "nan": lambda p: np.nan}
    monkeypatch.setattr(catalogue, "_loaded", lambda: tuple(
        catalogue.KnownBug(name, f"bug {name}", Scalar(f)) for name, f in bugs.items()))
    monkeypatch.setattr(catalogue, "paper", lambda: Scalar(lambda p: p))
    monkeypatch.setattr("conformance.diagnosis.matching.paper", lambda: Scalar(lambda p: p))


def names(matches):
    return [m["mutant"] for m in matches]


def test_a_match_on_a_degenerate_problem_alone_names_nothing(known):
    """At problem 1, "plus one" and "times two" coincide; the probe (5) tells them apart."""
    doubled = Scalar(lambda p: 2 * p)
    assert names(confirmed_matches(doubled, Question(answer, 1, probe=5), TOL)) == ["times_two"]
    tripled_plus = Scalar(lambda p: 3 * p - 1)  # 2 at problem 1, like both; 14 at 5, like neither
    assert confirmed_matches(tripled_plus, Question(answer, 1, probe=5), TOL) == []


def test_without_a_second_problem_nothing_is_named(known):
    assert confirmed_matches(Scalar(lambda p: 2 * p), Question(answer, 1), TOL) == []


def test_a_probe_where_the_bug_does_not_show_confirms_nothing(known):
    """At probe 0 every bug but plus-one gives the paper's answer: a non-degenerate probe is required."""
    assert confirmed_matches(Scalar(lambda p: 2 * p), Question(answer, 1, probe=0), TOL) == []


def test_a_match_that_parts_on_a_variant_names_nothing(known):
    """Problems 1 and 5 are one kind; -3 another (a configuration with another declared choice). "Times two" is
    confirmed on 1 and 5; a candidate that doubles only positive problems parts from it at -3 and is not named, though
    the bug may answer there as the paper does; the bug itself still is."""
    doubled_where_positive = Scalar(lambda p: 2 * p if p > 0 else p)
    assert names(confirmed_matches(doubled_where_positive, Question(answer, 1, probe=5), TOL)) == ["times_two"]
    assert confirmed_matches(doubled_where_positive, Question(answer, 1, probe=5, variants=(-3,)), TOL) == []
    assert names(confirmed_matches(Scalar(lambda p: 2 * p), Question(answer, 1, probe=5, variants=(-3,)), TOL)) \
        == ["times_two"]


def test_nan_matches_nothing(known):
    assert confirmed_matches(Scalar(lambda p: np.nan), Question(answer, 1, probe=5), TOL) == []


def test_a_constant_multiplier_on_the_rate_is_not_called_off_by_one(certify):
    """2 x lrate(1) = lrate(2) in warm-up: the off-by-one mutant matches step 1 and nothing else, so it is
    not named (the check compares every published number, not only the first that differs); the factor is,
    since the catalogue has it (OpenNMT-py's noam learning_rate 2)."""
    run = certify(adapter_path("lr_doubled"), "-k", "lrate", "--no-training")
    failed = [check for check in run.report["checks"] if check["status"] == "failed"]
    assert failed
    for check in failed:
        assert "off by one" not in check["message"], check["message"]
        assert [m["mutant"] for m in check["diagnosis"]] in ([], ["schedule_constant_multiplier"]), check["message"]
    assert any(check["diagnosis"] for check in failed)


def test_a_known_bug_is_named_once_and_confirmed(certify):
    run = certify("mutant:schedule_off_by_one", "-k", "lrate_matches_formula_for_any_step", "--no-training")
    (check,) = run.report["checks"]
    assert [m["mutant"] for m in check["diagnosis"]] == ["schedule_off_by_one"]
    assert check["message"].count("(mutant:schedule_off_by_one)") == 1
    assert "confirmed on a second, bigger problem" in check["message"]


def test_a_part_without_a_model_that_answers_twice_differently_is_said_to_keep_state(certify):
    """A schedule that counts its own calls answers one question twice differently: no dropout can be the cause, and
    none is suggested."""
    run = certify(adapter_path("lr_counts_its_calls"), "-k", "lrate_matches_formula_for_any_step", "--no-training")
    (check,) = run.report["checks"]
    assert check["status"] == "failed"
    assert "state kept between calls" in check["likely_cause"] and "dropout" not in check["likely_cause"]
