"""Declared deviations: the known, intentional differences of a third-party implementation from the paper.

A maintainer certifying real code lists them in a small TOML file (``certify --deviations FILE``)::

    [[deviation]]
    name = "pre_norm"                  # an entry of the catalogue: `transformer-conformance mutants` lists them,
    reason = "pre-norm trains better"  # or a structural pattern: extra_final_layer_norm, padded_positions_constant
    checks = ["encoder_layer_matches_reference*", "logits_match_*"]   # optional: ids (globs) it makes fail

A failing or erroring check is attributed to a declared deviation when its diagnosis names it (the
deviation is *confirmed*), or when its id matches the deviation's ``checks`` (declared, *not confirmed* by
the diagnosis). Its status becomes ``deviation``: reported apart, not counted against conformance. Every
other failure stays an *undeclared failure*. A declared deviation that no check shows is itself reported
("declared but not observed"), as array-api-tests reports an expected failure that passes; with
``--strict`` it fails the run.
"""

from __future__ import annotations

import difflib
import fnmatch
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from conformance.errors import LoadError


@dataclass(frozen=True)
class Deviation:
    name: str
    reason: str = ""
    checks: tuple[str, ...] = field(default_factory=tuple)


def known_names() -> list[str]:
    from conformance.diagnosis import PATTERNS
    from conformance.implementations import mutants

    return sorted(set(mutants.names()) | set(PATTERNS))


def load(path: str | Path) -> list[Deviation]:
    """Read and validate a deviations file; ``LoadError`` names the fix."""
    try:
        data = tomllib.loads(Path(path).read_text())
    except FileNotFoundError:
        raise LoadError(f"no deviations file {str(path)!r}. Fix: check the path") from None
    except tomllib.TOMLDecodeError as exc:
        raise LoadError(f"{path}: not valid TOML ({exc}). Fix: see docs/deviations.md for the format") from None
    entries = data.get("deviation")
    if not isinstance(entries, list) or not entries:
        raise LoadError(f"{path}: no [[deviation]] entries. Fix: see docs/deviations.md for the format")
    known = known_names()
    deviations = []
    for entry in entries:
        name = entry.get("name") if isinstance(entry, dict) else None
        if name not in known:
            close = difflib.get_close_matches(str(name), known, n=3, cutoff=0.5)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise LoadError(f"{path}: unknown deviation {name!r}{hint}. Fix: use a catalogue entry"
                            " (`transformer-conformance mutants` lists them) or a structural pattern"
                            f" ({', '.join(sorted(set(known) - _mutant_names()))})")
        checks = entry.get("checks", [])
        if not isinstance(checks, list) or not all(isinstance(c, str) for c in checks):
            raise LoadError(f"{path}: deviation {name!r}: checks must be a list of check ids or globs")
        deviations.append(Deviation(name, str(entry.get("reason", "")), tuple(checks)))
    return deviations


def _mutant_names() -> set[str]:
    from conformance.implementations import mutants

    return set(mutants.names())


def _components(match: dict) -> frozenset[str]:
    """The catalogue entries one diagnosis match names: one mutant, or each of a combination's."""
    return frozenset(match.get("mutants") or [match["mutant"]])


def named_by_diagnosis(result) -> set[str]:
    """The catalogue entries and structural patterns a failing check's diagnosis names."""
    return {name for match in result.diagnosis or [] if not match.get("contradicted_by")
            for name in _components(match)} | set(result.patterns or [])


def attribute(result, deviations: list[Deviation]) -> dict | None:
    """The declared deviations a failing check is attributed to, as the report's ``deviation`` field:
    {name ("a + b"), names, reason, confirmed}; None when no declaration explains it."""
    names = {d.name for d in deviations}
    matches, patterns = [_components(m) for m in result.diagnosis or []], set(result.patterns or [])
    # Every structural pattern found is a defect of its own: one left undeclared keeps the failure undeclared.
    # Mutant matches are alternatives (identical outputs): one declared match explains the output; a match
    # that is a combination (pre_norm + extra_final_layer_norm) is declared when each of its parts is.
    declared = [match for match in matches if match <= names]
    explained = patterns <= names and (not matches or declared) and (declared or patterns & names)
    confirmed_names = patterns.union(*declared)
    confirmed = [d for d in deviations if explained and d.name in confirmed_names]
    listed = [d for d in deviations if d not in confirmed
              and any(fnmatch.fnmatchcase(result.id, pattern) for pattern in d.checks)]
    if not confirmed and listed and (patterns - names):
        listed = []  # listed, but the diagnosis sees an undeclared pattern too
    chosen = confirmed + listed
    if not chosen:
        return None
    return {"name": " + ".join(d.name for d in chosen), "names": [d.name for d in chosen],
            "reason": "; ".join(d.reason for d in chosen if d.reason), "confirmed": bool(confirmed)}


def summary(results, deviations: list[Deviation]) -> list[dict]:
    """Per declared deviation: the checks attributed to it, those whose diagnosis confirms it, and whether
    the suite observed it at all."""
    rows = []
    for deviation in deviations:
        attributed = [r.id for r in results if r.deviation and deviation.name in r.deviation["names"]]
        confirmed = [r.id for r in results if r.status != "passed" and deviation.name in named_by_diagnosis(r)]
        rows.append({"name": deviation.name, "reason": deviation.reason, "observed": bool(attributed or confirmed),
                     "checks": attributed, "confirmed_by": confirmed})
    return rows
