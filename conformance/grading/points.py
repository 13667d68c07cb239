"""Points: how ``grade`` turns a report into a score (``points.toml``; docs/grading.md has the format).

```toml
default = { points = 1, visibility = "visible" }   # every check no rule below names
earns = ["passed", "advisory"]                      # the statuses that earn a check's points (``EARNABLE``)

[sections]                                          # a section's points, split evenly among its checks
"§3.5 Positional encoding" = { points = 10 }
"Published numbers*" = { points = 5, visibility = "after_published" }

[checks]                                            # one check's points (an id or a glob; wins over sections)
"base_size_forward_matches_golden" = { points = 3, visibility = "hidden" }
"published_*" = 0.5
```

Visibility is Gradescope's: ``visible``, ``hidden``, ``after_due_date``, ``after_published``.

Points come only from what the submission's own code computed: ``earns`` may name ``passed``, ``advisory`` (an
answer that holds the paper's claims but not a convention the suite adds where the paper is silent; an error is
never advisory) and ``deviation`` (an answer declared as a known deviation), nothing else; a submission that
cannot be loaded scores 0 whatever the file says; and a published-number check whose randomised twin failed or
erred earns nothing (``conformance.judging.twins.unearned``): the printed numbers alone could have been looked up.
"""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
DEFAULT_EARNS = ("passed", "advisory")  # advisory: a convention of this suite, not counted against a submission
EARNABLE = ("passed", "advisory", "deviation")  # an answer the code computed, and that holds (or is excused)
NOT_EARNABLE = {  # why the other statuses never earn points
    "failed": "the answer is wrong",
    "error": "no answer was judged (the code could not be loaded, raised, crashed, hung or returned NaN or inf)",
    "not_implemented": "the part is not there",
    "blocked": "a prerequisite did not pass, so nothing was asked",
    "supplied": "the suite's helpers answered, not the submission's code",
}


class PointsError(ValueError):
    """A points file that cannot be read; the message names the entry and the fix."""


@dataclass(frozen=True)
class Rule:
    points: float
    visibility: str = "visible"


@dataclass(frozen=True)
class ScoredCheck:
    id: str
    section: str
    status: str
    message: str
    score: float
    max_score: float
    visibility: str
    withheld: str = ""  # why a check whose status earns was given nothing (its randomised twin failed)


@dataclass
class Points:
    default: Rule = field(default_factory=lambda: Rule(1.0))
    earns: tuple[str, ...] = DEFAULT_EARNS
    sections: dict[str, Rule] = field(default_factory=dict)
    checks: dict[str, Rule] = field(default_factory=dict)
    source: str = "default (1 point per check)"

    @classmethod
    def from_toml(cls, path: str | Path) -> Points:
        try:
            data = tomllib.loads(Path(path).read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise PointsError(f"cannot read points file {path}: {exc}") from None
        unknown = set(data) - {"default", "earns", "sections", "checks"}
        if unknown:
            raise PointsError(f"{path}: unknown keys {sorted(unknown)}. Fix: use default, earns, sections, checks")
        return cls(
            default=_rule(data.get("default", {"points": 1}), f"{path}: default"),
            earns=_earns(data.get("earns", list(DEFAULT_EARNS)), f"{path}: earns"),
            sections={k: _rule(v, f"{path}: sections.{k!r}") for k, v in data.get("sections", {}).items()},
            checks={k: _rule(v, f"{path}: checks.{k!r}") for k, v in data.get("checks", {}).items()},
            source=str(path),
        )

    def score(self, checks: list[dict], *, loaded: bool = True) -> list[ScoredCheck]:
        """Each check of a report (``CheckResult.as_dict()``) with its points and what it earned; nothing
        earned when the implementation could not be loaded (``loaded`` False: ``report_loaded``)."""
        from conformance.judging.twins import unearned

        per_section: dict[str, int] = {}
        for check in checks:
            if self._check_rule(check["id"]) is None and self._section_rule(check["section"]):
                per_section[check["section"]] = per_section.get(check["section"], 0) + 1
        failed_twins = unearned(checks)
        return [self._score_one(check, per_section, loaded, failed_twins.get(check["id"])) for check in checks]

    def score_report(self, report: dict) -> list[ScoredCheck]:
        return self.score(report["checks"], loaded=report_loaded(report))

    def _score_one(self, check: dict, per_section: dict[str, int], loaded: bool,
                   failed_twin: tuple[str, str] | None) -> ScoredCheck:
        rule = self._check_rule(check["id"])
        section_rule = self._section_rule(check["section"])
        if rule is None and section_rule is not None:
            rule = Rule(section_rule.points / per_section[check["section"]], section_rule.visibility)
        rule = rule or self.default
        earned = rule.points if loaded and check["status"] in self.earns else 0.0
        withheld = ""
        if earned and failed_twin:
            earned, withheld = 0.0, withheld_reason(failed_twin)
        return ScoredCheck(check["id"], check["section"], check["status"], check.get("message") or "",
                           earned, rule.points, rule.visibility, withheld)

    def _check_rule(self, check_id: str) -> Rule | None:
        if check_id in self.checks:
            return self.checks[check_id]
        base = check_id.split("[", 1)[0]
        return next((rule for pattern, rule in self.checks.items()
                     if fnmatch.fnmatchcase(check_id, pattern) or fnmatch.fnmatchcase(base, pattern)), None)

    def _section_rule(self, section: str) -> Rule | None:
        return self.sections.get(section) or next(
            (rule for pattern, rule in self.sections.items() if fnmatch.fnmatchcase(section, pattern)), None)


def withheld_reason(failed_twin: tuple[str, str]) -> str:
    twin, status = failed_twin
    what = {"failed": "failed", "error": "ended in an error",
            "refused": "was refused on every fresh input it drew (not implemented there, where the printed inputs"
                       " were answered)"}.get(status, "was found looked up, on evidence")
    return (f"no points: the randomised twin {twin} {what}: the published example alone is no evidence of a"
            " computed answer (the printed numbers could have been looked up)")


def withheld_line(check_ids: list[str]) -> str:
    """The grade's one line on the published checks that earned nothing (after the score, in Gradescope's output)."""
    return (f"no points for {len(check_ids)} published-number check(s) whose randomised twin failed, erred or was"
            f" looked up: {', '.join(sorted(check_ids))}")


def report_loaded(report: dict) -> bool:
    """Whether the report's implementation was loaded (``implementations[].loaded``; reports written before it
    was recorded: every check an error that says the implementation could not be loaded)."""
    recorded = [impl["loaded"] for impl in report.get("implementations", []) if "loaded" in impl]
    if recorded:
        return all(recorded)
    checks = report.get("checks") or []
    return not checks or not all(c["status"] == "error" and "could not be loaded" in (c.get("message") or "")
                                 for c in checks)


def _earns(value, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(status, str) for status in value):
        raise PointsError(f"{where}: expected a list of statuses such as [\"passed\", \"advisory\"], got {value!r}")
    refused = [status for status in value if status not in EARNABLE]
    if refused:
        why = "; ".join(f"{status!r}: {NOT_EARNABLE.get(status, 'not a status of a check')}" for status in refused)
        raise PointsError(f"{where}: {why}. Points come only from what the code computed: earns may name"
                          f" {', '.join(EARNABLE)}")
    return tuple(value)


def _rule(value, where: str) -> Rule:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return Rule(float(value))
    if not isinstance(value, dict) or "points" not in value:
        raise PointsError(f"{where}: expected a number or {{ points = N, visibility = ... }}, got {value!r}")
    visibility = value.get("visibility", "visible")
    if visibility not in VISIBILITIES:
        raise PointsError(f"{where}: visibility {visibility!r} is not one of {', '.join(VISIBILITIES)}")
    points = value["points"]
    if not isinstance(points, int | float) or isinstance(points, bool) or points < 0:
        raise PointsError(f"{where}: points must be a number >= 0, got {points!r}")
    return Rule(float(points), visibility)


def totals(scored: list[ScoredCheck]) -> tuple[float, float]:
    """(score, max_score), rounded to 4 decimals so that sums of split section points stay exact-looking."""
    return round(sum(s.score for s in scored), 4), round(sum(s.max_score for s in scored), 4)


TEMPLATE = '''# points.toml: how `transformer-conformance grade` scores a submission (docs/grading.md).
# Every check is worth `default` points unless a section or check rule below names it.
default = { points = 1, visibility = "visible" }

# What earns a check's points: only what the submission's own code computed.
#   passed     its answer holds the claim (of the paper, or of the lessons' published numbers)
#   advisory   its answer holds the paper's claims, only not a convention this suite adds where the paper is
#              silent (a query whose keys are all masked): not held against a student. An error is never advisory.
# Never: failed (the answer is wrong), error (no answer: the code could not be loaded, raised, crashed, hung or
# returned NaN or inf), not_implemented, blocked (a prerequisite failed), supplied (the suite's helpers answered).
# A submission that cannot be loaded scores 0, whatever this file says, and a published-number check earns nothing
# when its randomised twin (the same claim on inputs drawn for the run) failed: the numbers could be looked up.
earns = ["passed", "advisory"]

[sections]
# "§3.5 Positional encoding" = { points = 10 }          # split evenly among the section's checks
# "Published numbers of the lessons" = { points = 5, visibility = "after_published" }

[checks]
# "base_size_forward_matches_golden" = { points = 3, visibility = "hidden" }
# "reversal_task_is_learned" = 5
'''
