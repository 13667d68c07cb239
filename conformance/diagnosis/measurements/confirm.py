"""One failing question, asked of the candidate and of the paper on the failing problem and a second one.

``Asked.of`` records which parts the question calls (a model question calls ``build_model``, a table question
``positional_encoding``), keeps the candidate's and the paper's answers on both problems, and refuses a question
whose answers are no evidence: the candidate right on the second problem, or a degenerate answer there. A
neighbouring formula (``refitted``) is confirmed on it as a known bug is: it answers as the candidate on both
problems, and the paper does not on the second.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np

from conformance.diagnosis.degenerate import degenerate
from conformance.diagnosis.matching import _answer, _distance, _same, known_answer
from conformance.diagnosis.question import Question

CONSTANT = "a constant"  # how ``degenerate`` starts the reason of an answer with one value


class _Recorder:
    """The candidate, noting every method the question calls on it (its parts, ``build_model``...)."""

    def __init__(self, candidate):
        self._candidate, self.called = candidate, set()

    def __getattr__(self, name):
        value = getattr(self._candidate, name)
        if callable(value):
            self.called.add(name)
        return value


def parts_called(candidate, question: Question) -> set:
    """The candidate's methods ``question`` calls on its failing problem."""
    recorder = _Recorder(candidate)
    question.ask(recorder, candidate.fit(question.problem))
    return recorder.called


@dataclass
class Asked:
    candidate: object
    question: Question
    same: object  # how two answers are judged equal
    problem: object
    second: object
    mine: np.ndarray
    mine_second: np.ndarray
    paper: np.ndarray | None
    paper_second: np.ndarray
    parts: set
    max_abs: float | None = None
    probe_max_abs: float | None = None
    disk_cache: bool = True  # the run reads and writes the answers kept on disk (``matching.known_answer``)
    # why the candidate's answer on the second problem is no evidence of a bug in particular (``degenerate``): a
    # constant; only a measurement that says the part itself is constant (``Knob.facts["constant"]``) describes it
    collapsed: str | None = None
    tol: object = None  # the failing comparison's: a whole call's answers (``Question.whole``) are judged with it
    _wholes: dict = dataclasses.field(default_factory=dict)  # the candidate's whole answers, by problem

    @classmethod
    def of(cls, candidate, question: Question, tol, *, disk_cache: bool = True) -> Asked | None:
        """The question's answers, or None when they are no evidence of anything."""
        reference = paper_for_description(candidate)
        second = question.second()
        if reference is None or second is None:
            return None
        problem, second = candidate.fit(question.problem), candidate.fit(second)
        recorder = _Recorder(candidate)
        mine = _answer(question, recorder, problem)
        mine_second = _answer(question, candidate, second)
        same = _same(question, tol)
        theirs, theirs_second = (known_answer(question, reference, p, disk_cache=disk_cache) for p in (problem, second))
        if mine is None or mine_second is None or theirs_second is None:
            return None
        if not np.isfinite(mine).all() or same(mine_second, theirs_second):
            return None  # right on the second problem: nothing to confirm
        collapsed = degenerate(mine_second, theirs_second)
        if collapsed and not collapsed.startswith(CONSTANT):
            return None  # collapsed there: evidence of no bug in particular
        return cls(candidate, question, same, problem, second, mine, mine_second, theirs, theirs_second,
                   recorder.called, disk_cache=disk_cache, collapsed=collapsed, tol=tol)

    # -- the neighbouring formula ---------------------------------------------------------------------
    def reproduces(self, neighbour) -> tuple[float, float] | None:
        """(max diff here, there) when ``neighbour`` answers as the candidate on both problems and not as the
        paper on the second; else None."""
        here = known_answer(self.question, neighbour, self.problem, disk_cache=self.disk_cache)
        if not self.same(self.mine, here):
            return None
        there = known_answer(self.question, neighbour, self.second, disk_cache=self.disk_cache)
        if not self.same(self.mine_second, there) or self.same(there, self.paper_second):
            return None
        if not self.answers_the_whole_call(neighbour):
            return None
        return _distance(self.mine, here), _distance(self.mine_second, there)

    def answers_the_whole_call(self, neighbour) -> bool:
        """Where the question asks one part of a call's return: the neighbour returns the whole call as the
        candidate does on both problems, or the candidate's other parts are the paper's (``part_only``: then
        what the neighbour says holds of that part alone; attention that returns its weights unmasked while its
        output is masked has no mask ignored, only weights returned unmasked)."""
        from conformance.diagnosis.matching import wholes_agree

        if self.question.whole is None or self.part_only:
            return True
        try:
            pairs = [(self._whole(p), self.question.ask_whole(neighbour, p)) for p in (self.problem, self.second)]
        except Exception:  # noqa: BLE001 - a whole call that cannot be asked takes nothing from the part's match
            return True
        return all(wholes_agree(mine, theirs, self.tol) for mine, theirs in pairs)

    @functools.cached_property
    def part_only(self) -> str | None:
        """The name of the asked part (``Question.part``) when the candidate's other parts of the call are the
        paper's on both problems: a description of this question then holds of that part alone."""
        from conformance.diagnosis.matching import wholes_agree

        if self.question.whole is None or self.question.part is None:
            return None
        index, name = self.question.part
        reference = paper_for_description(self.candidate)
        try:
            same = all(wholes_agree(self._whole(p), self.question.ask_whole(reference, p), self.tol, leaving=index)
                       for p in (self.problem, self.second))
        except Exception:  # noqa: BLE001 - unknown: said of the call, as for any question
            return None
        return name if same else None

    def _whole(self, problem):
        if id(problem) not in self._wholes:  # the failing problem or the second (a dict is no key)
            self._wholes[id(problem)] = self.question.ask_whole(self.candidate, problem)
        return self._wholes[id(problem)]

    def said_of_the_part(self, text: str) -> str:
        """A description, said of the one part it holds for where the candidate's other outputs are the paper's."""
        if not self.part_only:
            return text
        return f"in the {self.part_only} it returns only (its other outputs are the paper's): {text}"

    def refitted(self, knobs: list) -> list[dict]:
        """One description per knob of the neighbouring formula that reproduces this question's answers, the
        knobs it does not need left out (a schedule knob says nothing of an attention question)."""
        from conformance.diagnosis.measurements.base import as_description

        if not knobs:
            return []
        used = {knob.name: knob for knob in knobs}
        confirmed = self.reproduces(_neighbour(used))
        if confirmed is None:
            return []
        for name in sorted(used):
            fewer = {k: v for k, v in used.items() if k != name}
            if fewer and (again := self.reproduces(_neighbour(fewer))) is not None:
                used, confirmed = fewer, again
        self.max_abs, self.probe_max_abs = confirmed
        return [as_description(knob.key.split(":", 1)[0], "refit", knob.text, knob.key, max_abs=confirmed[0],
                               probe_max_abs=confirmed[1], facts=knob.facts) for knob in used.values()]


def paper_for_description(candidate):
    """The paper's answers a description is judged against: the same as a name's (``matching.paper_for``)."""
    from conformance.diagnosis.matching import paper_for

    return paper_for(candidate)


_NEIGHBOURS: dict = {}


def _neighbour(knobs: dict):
    """The neighbouring formula with ``knobs`` as a candidate, one per set of knobs (so its answers are kept)."""
    from conformance.boundary.candidate import Candidate
    from conformance.diagnosis.neighbour import Neighbour

    key = tuple(sorted((name, id(knob)) for name, knob in knobs.items()))
    if key not in _NEIGHBOURS:
        laws = {name: knob.law for name, knob in knobs.items()}
        _NEIGHBOURS[key] = (list(knobs.values()), Candidate(Neighbour(laws), name="neighbour", timeout_s=None))
    return _NEIGHBOURS[key][1]
