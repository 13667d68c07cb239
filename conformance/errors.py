"""The outcomes a check can end in besides "passed", as exceptions that carry structured fields.

Reporters read the fields (``as_fields``), never the message text. The plugin maps each exception to
a status: ``CheckFailure`` -> failed, ``AdapterError`` and ``BadOutput`` -> error,
``PartNotImplemented`` -> not implemented, ``Blocked`` -> blocked.
"""

from __future__ import annotations

from typing import Any


class ConformanceOutcome(Exception):
    """Base class: an outcome with fields for the report."""

    status = "error"

    def __init__(self, message: str, **fields: Any):
        super().__init__(message)
        self.message = message
        self.fields = fields

    def as_fields(self) -> dict[str, Any]:
        return {"message": self.message, **self.fields}


class CheckFailure(ConformanceOutcome, AssertionError):
    """The implementation answered, and the answer violates the paper's claim the check tests.

    Fields (all optional): expected, actual (excerpts), index (worst), max_abs, max_rel, tolerance,
    margin (error / allowed), likely_cause, difference (compare.difference_window: the heatmap's values).
    """

    status = "failed"


class AdapterError(ConformanceOutcome):
    """The adapter raised, hung or returned something that cannot be compared.

    Happens when a part's code crashes or times out; the check is reported as an *error* naming the
    part and the exception, and the run goes on with the next check.
    """

    status = "error"


class BadOutput(AdapterError):
    """The adapter returned the wrong kind of value: a list, a tensor, the wrong shape or dtype, NaN.

    Fix the adapter's conversion: every value crossing the boundary is a numpy array or a Python
    scalar (e.g. ``tensor.detach().cpu().numpy()``).
    """


class PartNotImplemented(ConformanceOutcome):
    """The adapter does not provide a part the check needs; not a failure."""

    status = "not_implemented"


class Blocked(ConformanceOutcome):
    """A prerequisite check did not pass, so this check's verdict would say nothing new."""

    status = "blocked"


class LoadError(Exception):
    """An implementation could not be loaded; the message names the fix."""
