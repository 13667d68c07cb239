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

from conformance.compare import Measurement, assert_close
from conformance.errors import CheckFailure, ConformanceOutcome
from conformance.results import plain
from conformance.tolerances import MODEL, Tolerance, for_dtype


def reporting() -> bool:
    """True outside hypothesis, and on hypothesis's final replay of a failing example."""
    try:
        from hypothesis.control import current_build_context

        return bool(current_build_context().is_final)
    except Exception:  # noqa: BLE001 - no build context: not inside a hypothesis test
        return True


class Check:
    def __init__(self, candidate=None):
        self.candidate = candidate
        self.measurements: list[dict] = []
        self.data: dict = {}

    def __repr__(self) -> str:  # hypothesis prints the arguments of a failing example
        return f"check({len(self.measurements)} comparisons so far)"

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

    def explain(self, failure: CheckFailure, tol: Tolerance | None, *, ask=None, locate=None, structure=None) -> None:
        """Append the diagnosis to ``failure``: confirmed known bug, first divergence, structure."""
        from conformance.diagnosis import confirmed_matches
        from conformance.diagnosis.message import tail

        if not reporting() or self.candidate is None:
            return
        tol = tol or (ask.tol if ask is not None and ask.tol else for_dtype(MODEL, self.candidate.conventions.dtype))
        matches = _quietly(lambda: confirmed_matches(self.candidate, ask, tol)) if ask is not None else []
        where = _safely(locate) if locate else None
        patterns = (_quietly(structure) or []) if structure else []
        lines = tail(matches or [], where, patterns)
        failure.fields.update(diagnosis=matches or [], patterns=patterns)
        if matches:
            failure.fields["likely_cause"] = f"{matches[0]['bug']} (mutant:{matches[0]['mutant']})"
        if lines:
            failure.message = "\n".join([failure.message, *lines])
            failure.args = (failure.message,)


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
