"""Which known bug the candidate's wrong answer is: rerun the question on every mutant, confirm on a probe."""

from __future__ import annotations

import numpy as np

from conformance.compare import measure
from conformance.diagnosis.catalogue import known_bugs, paper
from conformance.diagnosis.question import Question
from conformance.tolerances import Tolerance


def _answer(question: Question, candidate, problem=None) -> np.ndarray | None:
    try:
        return question.ask(candidate, problem)
    except Exception:  # noqa: BLE001 - a candidate that cannot answer this question explains nothing here
        return None


def agrees(actual, expected, tol: Tolerance) -> bool:
    """Same shape and every value within ``tol``; a NaN on either side never agrees."""
    return actual is not None and expected is not None and np.shape(actual) == np.shape(expected) \
        and measure(actual, expected, tol).passed


def _same(question: Question, tol: Tolerance):
    """How this question judges two answers the same: its own ``agree``, or elementwise within ``tol``."""
    if question.agree is None:
        return lambda a, b: agrees(a, b, tol)
    return lambda a, b: (a is not None and b is not None and np.shape(a) == np.shape(b)
                         and bool(np.isfinite(a).all() and np.isfinite(b).all()) and question.agree(a, b))


def _distance(a, b) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b)).max()) if np.size(a) else 0.0


def confirmed_matches(candidate, question: Question, tol: Tolerance, *, actual=None) -> list[dict]:
    """The known bugs whose answer equals the candidate's on the failing problem and on a second one where
    they differ from the paper's: [{mutant, bug, max_abs, probe_max_abs}], closest first."""
    problem = candidate.fit(question.problem)  # every candidate is asked exactly what this one was
    mine = _answer(question, candidate, problem) if actual is None else np.asarray(actual, np.float64)
    if mine is None or not np.isfinite(mine).all():
        return []
    same = _same(question, tol)
    first = []
    for known in known_bugs():
        theirs = _answer(question, known.candidate, problem)
        if same(mine, theirs):
            first.append((known, _distance(mine, theirs)))
    if not first:
        return []
    return _confirm(candidate, question, same, first)


def _confirm(candidate, question: Question, same, first) -> list[dict]:
    second = question.second()
    reference = paper()
    if second is None or reference is None:
        return []
    second = candidate.fit(second)
    mine, correct = _answer(question, candidate, second), _answer(question, reference, second)
    if mine is None or correct is None or same(mine, correct):
        return []  # on the probe the candidate is right: nothing to confirm
    confirmed = []
    for known, max_abs in first:
        theirs = _answer(question, known.candidate, second)
        if same(mine, theirs) and not same(theirs, correct):
            confirmed.append({"mutant": known.name, "bug": known.bug, "max_abs": max_abs,
                              "probe_max_abs": _distance(mine, theirs)})
    return sorted(confirmed, key=lambda match: match["max_abs"])
