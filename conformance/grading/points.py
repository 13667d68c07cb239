"""Points: how ``grade`` turns a report into a score (``points.toml``; docs/grading.md has the format).

```toml
default = { points = 1, visibility = "visible" }   # every check no rule below names
earns = ["passed", "advisory"]                      # the statuses that earn a check's points

[sections]                                          # a section's points, split evenly among its checks
"§3.5 Positional encoding" = { points = 10 }
"Published numbers*" = { points = 5, visibility = "after_published" }

[checks]                                            # one check's points (an id or a glob; wins over sections)
"base_size_forward_matches_golden" = { points = 3, visibility = "hidden" }
"published_*" = 0.5
```

Visibility is Gradescope's: ``visible``, ``hidden``, ``after_due_date``, ``after_published``.
"""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
DEFAULT_EARNS = ("passed", "advisory")  # advisory: a convention of this suite, not counted against a submission


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
            earns=tuple(data.get("earns", DEFAULT_EARNS)),
            sections={k: _rule(v, f"{path}: sections.{k!r}") for k, v in data.get("sections", {}).items()},
            checks={k: _rule(v, f"{path}: checks.{k!r}") for k, v in data.get("checks", {}).items()},
            source=str(path),
        )

    def score(self, checks: list[dict]) -> list[ScoredCheck]:
        """Each check of a report (``CheckResult.as_dict()``) with its points and what it earned."""
        per_section: dict[str, int] = {}
        for check in checks:
            if self._check_rule(check["id"]) is None and self._section_rule(check["section"]):
                per_section[check["section"]] = per_section.get(check["section"], 0) + 1
        return [self._score_one(check, per_section) for check in checks]

    def _score_one(self, check: dict, per_section: dict[str, int]) -> ScoredCheck:
        rule = self._check_rule(check["id"])
        section_rule = self._section_rule(check["section"])
        if rule is None and section_rule is not None:
            rule = Rule(section_rule.points / per_section[check["section"]], section_rule.visibility)
        rule = rule or self.default
        earned = rule.points if check["status"] in self.earns else 0.0
        return ScoredCheck(check["id"], check["section"], check["status"], check.get("message") or "",
                           earned, rule.points, rule.visibility)

    def _check_rule(self, check_id: str) -> Rule | None:
        if check_id in self.checks:
            return self.checks[check_id]
        base = check_id.split("[", 1)[0]
        return next((rule for pattern, rule in self.checks.items()
                     if fnmatch.fnmatchcase(check_id, pattern) or fnmatch.fnmatchcase(base, pattern)), None)

    def _section_rule(self, section: str) -> Rule | None:
        return self.sections.get(section) or next(
            (rule for pattern, rule in self.sections.items() if fnmatch.fnmatchcase(section, pattern)), None)


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
earns = ["passed", "advisory"]

[sections]
# "§3.5 Positional encoding" = { points = 10 }          # split evenly among the section's checks
# "Published numbers of the lessons" = { points = 5, visibility = "after_published" }

[checks]
# "base_size_forward_matches_golden" = { points = 3, visibility = "hidden" }
# "reversal_task_is_learned" = 5
'''
