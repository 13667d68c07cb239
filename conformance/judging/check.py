"""The ``check`` fixture: what a check asserts, recorded for the report, and explained when it fails.

``check.close(actual, expected, tol, what=..., ask=Question(...), locate=..., structure=...)`` compares
arrays (``compare.assert_close``) and records the margin; ``check.claim(condition, message, ...)`` states
a claim that is not a numeric comparison; ``check.record(name, data)`` keeps curves and tables. When a
claim fails, the explanation is computed once, in a fixed order (``diagnosis.message``): the known bug
the candidate's answer matches, confirmed on a second problem (``ask``); where a composite first diverges
(``locate``); the structural patterns its model shows (``structure``). Inside hypothesis only the final
replay of a failing example is explained, not every shrinking step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from conformance.compare import Measurement, assert_close
from conformance.errors import BadOutput, CheckFailure, ConformanceOutcome
from conformance.paper import published
from conformance.results import plain
from conformance.tolerances import HALF, MODEL, UNIT_ROUNDOFF, Tolerance, for_dtype


def reporting() -> bool:
    """True outside hypothesis, and on hypothesis's final replay of a failing example."""
    try:
        from hypothesis.control import current_build_context

        return bool(current_build_context().is_final)
    except Exception:  # noqa: BLE001 - no build context: not inside a hypothesis test
        return True


@dataclass(frozen=True)
class Holds:
    """What a published statement ("permutation-equivariant", "does not depend on d_model") came to on the candidate,
    for ``Check.published_values``: whether it holds there, and what was measured."""

    holds: bool
    measured: str


class Check:
    def __init__(self, candidate=None, *, diagnose: bool = True, disk_cache: bool = True, check_id: str | None = None):
        self.candidate, self.diagnose, self.check_id = candidate, diagnose, check_id
        self.disk_cache = disk_cache  # the diagnosis may read and write the answers kept on disk (--no-cache, grade)
        self.measurements: list[dict] = []
        self.data: dict = {}
        self.facts: set[str] = set()  # the published facts this check compared against
        self.missed: set[str] = set()  # those of them it found not reproduced (``published_values`` names each)

    def __repr__(self) -> str:  # hypothesis prints the arguments of a failing example
        return f"check({len(self.measurements)} comparisons so far)"

    def published(self, fact_id: str):
        """A published fact's value, as printed; the check's report lists the facts it read."""
        self.facts.add(fact_id)
        return published.value(fact_id)

    def record(self, name: str, data) -> None:
        """Keep ``data`` (plain numbers, lists, dicts) in the report under the check's ``data[name]``."""
        self.data[name] = plain(data)

    def close(self, actual, expected, tol: Tolerance, *, what: str, ask=None, locate: Callable | None = None,
              structure: Callable | None = None) -> Measurement:
        """``assert_close`` that records the margin, and explains a failure."""
        __tracebackhide__ = True
        try:
            measured = assert_close(actual, expected, tol, what=what)
        except CheckFailure as failure:
            self.measurements.append({"what": what, **{k: failure.fields.get(k) for k in ("max_abs", "max_rel",
                                                                                          "margin")}})
            self.explain(failure, tol, ask=ask, locate=locate, structure=structure)
            raise
        self.measurements.append({"what": what, "max_abs": measured.max_abs, "max_rel": measured.max_rel,
                                  "margin": measured.margin})
        return measured

    def claim(self, condition: bool, message: str, *, ask=None, tol: Tolerance | None = None,
              locate: Callable | None = None, **fields) -> None:
        """A claim that is not a numeric comparison (a mask pattern, a stopping rule); ``fields`` are the
        report's (expected, actual, ...). ``ask`` names the known bug whose answer the candidate's matches."""
        __tracebackhide__ = True
        if condition:
            return
        failure = CheckFailure(message, **fields)
        self.explain(failure, tol, ask=ask, locate=locate)
        raise failure

    @staticmethod
    def finite_where_no_row_is_empty(answer: Callable, *, problem: str) -> None:
        """Ask ``answer`` (the same question on a ``problem`` where every query sees a key): a convention that
        judges finiteness (a fully masked row) excuses NaN only in the rows it is about, so NaN here is an error
        of the code, as on any other check, never that convention's advisory (``plugin._classify``)."""
        __tracebackhide__ = True
        try:
            answer()
        except BadOutput as exc:
            if exc.fields.get("actual") != "NaN/inf":
                raise
            raise BadOutput(f"{exc.message} It did so on {problem}, where no query has every key masked: not the"
                            " fully masked row this convention is about.", part=exc.fields.get("part"),
                            expected="finite values where every query sees a key",
                            actual="NaN/inf with no row fully masked") from None

    def _dtype(self) -> str:
        """The dtype a published number's own rounding is counted in, on top of its printing: the candidate's half
        dtype; float32 otherwise (float32 at worst, as before half precision: a float64 candidate included)."""
        dtype = self.candidate.conventions.dtype if self.candidate is not None else "float32"
        return dtype if dtype in HALF else "float32"

    def printed(self, fact_id: str, *, magnitude: float | None = None) -> Tolerance:
        """A published number's tolerance: half a unit of its last printed digit, plus the candidate's dtype's
        rounding; ``magnitude``: the size of the quantities the value is computed from (a component of a unit
        pair: 1), whose rounding in half precision (2u of it) a small value inherits."""
        tol, dtype = published.tolerance(fact_id, computed_in=self._dtype()), self._dtype()
        if magnitude is None or dtype not in HALF:
            return tol
        return Tolerance(tol.rtol, tol.atol + 2 * UNIT_ROUNDOFF[dtype] * magnitude,
                         f"{tol.reason}; computed from values of magnitude {magnitude:g}, each off by 2u of it")

    def published_values(self, pairs, *, what: str, floor: Tolerance | None = None) -> None:
        """``pairs``: (fact_id, got) or (fact_id, got, floor), each compared with the published value at half a
        unit of its last printed digit (or ``floor``, when the value is read back through inexact arithmetic
        and that is the looser), or (fact_id, Holds(...)) for a statement; then one failure naming every fact that
        differs."""
        __tracebackhide__ = True
        failures = []
        for fact_id, got, *own_floor in pairs:
            if isinstance(got, Holds):
                self.published(fact_id)
                if not got.holds:
                    self.missed.add(fact_id)
                    failures.append(f"{what} [{fact_id}, {published.cite(fact_id)}]: "
                                    f"{published.fact(fact_id)['printed']!r} does not hold: {got.measured}")
                continue
            try:
                self.published(fact_id)
                self.close(np.asarray(got, dtype=np.float64), np.asarray(published.bound(fact_id), dtype=np.float64),
                           _looser(fact_id, own_floor[0] if own_floor else floor, self._dtype()),
                           what=f"{what} [{fact_id}, {published.cite(fact_id)}]")
            except AssertionError as exc:
                self.missed.add(fact_id)
                failures.append(str(exc).splitlines()[0] + f" (got {fmt_values(got)},"
                                f" published {published.fact(fact_id)['printed']!r})")
        if failures:
            raise CheckFailure(f"{len(failures)} published value(s) not reproduced:\n  " + "\n  ".join(failures),
                               expected="the published values", actual="see message")

    def explain(self, failure: CheckFailure, tol: Tolerance | None, *, ask=None, locate=None, structure=None) -> None:
        """Append the diagnosis to ``failure``: confirmed known bug, first divergence, structure."""
        from conformance.diagnosis import confirmed_matches
        from conformance.diagnosis.matching import answers_vary, offered
        from conformance.diagnosis.measurements import describe
        from conformance.diagnosis.measurements.confirm import parts_called
        from conformance.diagnosis.message import fmt_descriptions, named, tail, varying_answers

        if not reporting() or self.candidate is None:
            return
        self._lookup_evidence()
        if not self.diagnose:
            return
        tol = tol or (ask.tol if ask is not None and ask.tol else for_dtype(MODEL, self.candidate.conventions.dtype))
        disk = self.disk_cache
        matches = _quietly(lambda: confirmed_matches(self.candidate, ask, tol, disk_cache=disk)) \
            if ask is not None else []
        where = _safely(locate) if locate else None
        patterns = (_quietly(structure) or []) if structure else []
        shown = (_quietly(lambda: offered(self.candidate, ask, tol, matches, disk_cache=disk)) or matches) \
            if matches else []
        lines = tail(shown, where, patterns)
        failure.fields.update(diagnosis=matches or [], patterns=patterns)
        if matches:
            failure.fields["likely_cause"] = named(matches[0]) if matches[0].get("mutants") else \
                f"{matches[0]['bug']} (mutant:{matches[0]['mutant']})"  # a single bug's text as it always was
        elif ask is not None and _quietly(lambda: answers_vary(self.candidate, ask)):
            varying = varying_answers(_quietly(lambda: parts_called(self.candidate, ask)) or ())
            failure.fields["likely_cause"] = varying
            lines.append(f"  likely cause: {varying}")
        elif ask is not None:  # no known bug: what was measured, confirmed on a second problem
            described = _quietly(lambda: describe(self.candidate, ask, tol, disk_cache=disk)) or []
            failure.fields["descriptions"] = described
            said = [d["text"] for d in described]
            lines = [line for line in lines if not any(line.strip() in text for text in said)]  # said once
            lines[:0] = fmt_descriptions(described)
            if described and not patterns:
                failure.fields["likely_cause"] = f"measured: {described[0]['text']}"
        if lines:
            failure.message = "\n".join([failure.message, *lines])
            failure.args = (failure.message,)


    def _lookup_evidence(self) -> None:
        """A failing randomised twin of a published-number check: is there evidence of a look-up (``twins``)?"""
        from conformance.judging.twins import TWIN_IDS, base_id, lookup_evidence

        if self.check_id and base_id(self.check_id) in TWIN_IDS and "lookup" not in self.data:
            evidence = _quietly(lambda: lookup_evidence(self.candidate, self.check_id))
            if evidence is not None:
                self.record("lookup", evidence)


def _looser(fact_id: str, floor: Tolerance | None, dtype: str = "float32") -> Tolerance:
    printed_tol = published.tolerance(fact_id, computed_in=dtype)
    if floor is None or (printed_tol.rtol >= floor.rtol and printed_tol.atol >= floor.atol):
        return printed_tol
    return Tolerance(max(printed_tol.rtol, floor.rtol), max(printed_tol.atol, floor.atol),
                     f"{printed_tol.reason}; {floor.reason}")


def fmt_values(got) -> str:
    """Six significant digits, whatever the magnitude: a rate of 3.49e-07 must not print as 0.0."""
    values = np.asarray(got, dtype=np.float64)
    text = [f"{v:.6g}" for v in values.ravel()]
    return text[0] if values.ndim == 0 else "[" + ", ".join(text) + "]"


def _quietly(fn: Callable):
    """An explanation that cannot be computed is simply not offered."""
    try:
        return fn()
    except Exception:  # noqa: BLE001
        return None


def _safely(fn: Callable):
    """A localisation must never hide the failure it explains."""
    try:
        return fn()
    except ConformanceOutcome as exc:
        return f"(could not localise: {exc.message.splitlines()[0]})"
    except Exception as exc:  # noqa: BLE001 - a bug in the localisation; say so, keep the failure
        return f"(could not localise: {type(exc).__name__}: {exc})"
