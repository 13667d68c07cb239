"""What every rendering of the JSON report (docs/report-format.md) reads the same way: loading and
validating a saved report, the paper's order of sections, the label and colour of each status, and
the checks of one implementation, failures first.

Statuses are rendered through ``style(status)``, which falls back to a neutral style for a status this
module does not know yet (``conformance.results.STATUSES`` may grow); what counts against conformance
is ``conformance.results.FAILING``, never a list kept here.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from conformance.results import FAILING, SCHEMA_VERSION


@dataclass(frozen=True)
class Style:
    label: str  # short, upper case: the terminal's column, the badge's and the HTML's pill
    colour: str  # a CSS colour readable under white text
    counted: bool  # whether the status counts against conformance (conformance.results.FAILING)


STYLES = {
    "passed": Style("PASS", "#2e7d32", False),
    "failed": Style("FAIL", "#c62828", True),
    "error": Style("ERROR", "#8e24aa", True),
    "advisory": Style("ADVISORY", "#b26a00", False),
    "deviation": Style("DEVIANT", "#5d4037", False),
    "supplied": Style("SUPPLIED", "#00695c", False),
    "not_implemented": Style("N/I", "#616161", False),
    "blocked": Style("BLOCKED", "#455a64", False),
}


def style(status: str) -> Style:
    """``STYLES[status]``, or a neutral style named after an unknown status."""
    known = STYLES.get(status)
    counted = status in FAILING
    if known is None:
        return Style(status.replace("_", " ").upper(), "#546e7a", counted)
    return Style(known.label, known.colour, counted)


def is_failing(check: dict) -> bool:
    return check["status"] in FAILING


# ------------------------------------------------------------------------------------------------
# Loading
# ------------------------------------------------------------------------------------------------


class ReportError(ValueError):
    """A file that is not a report of this schema version; the message names the field and the fix."""


@functools.cache
def schema() -> dict:
    """The JSON Schema of the report (``reports/report.schema.json``, shipped in the package)."""
    return json.loads(resources.files("conformance.reports").joinpath("report.schema.json").read_text())


def load(path: str | Path) -> dict:
    """Read a saved report, refusing another schema or version with the reason."""
    try:
        report = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ReportError(f"cannot read {path}: {exc}") from exc
    check_report(report, where=str(path))
    return report


def check_report(report: dict, *, where: str = "report") -> None:
    if not isinstance(report, dict) or report.get("schema") != "transformer-conformance/report":
        raise ReportError(f"{where} is not a transformer-conformance report (no \"schema\":"
                          " \"transformer-conformance/report\"); write one with certify --json PATH")
    if report.get("schema_version") != SCHEMA_VERSION:
        raise ReportError(f"{where} has schema_version {report.get('schema_version')!r}, this suite renders"
                          f" version {SCHEMA_VERSION}; render it with the suite version that wrote it")
    missing = [name for name in ("implementations", "summary", "verdict", "checks") if name not in report]
    if missing:
        raise ReportError(f"{where} lacks {', '.join(missing)}; a report written by certify --json has them")


# ------------------------------------------------------------------------------------------------
# Order
# ------------------------------------------------------------------------------------------------

_SECTION_NUMBER = re.compile(r"§(\d+(?:\.\d+)*)")


def declared_supports(supports: dict, reasons: dict) -> list[str]:
    """One line per limit an adapter declared (``Conventions.supports``): "attention_bias in (True,): projections
    always carry biases", "max_len <= 100: learned positions". A limit on a size is one number, the most allowed;
    any other, the values allowed."""
    return [(f"{feature} <= {values}" if _is_number(values) else f"{feature} in {tuple(values)}")
            + (f": {reasons[feature]}" if feature in reasons else "") for feature, values in supports.items()]


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def section_key(section: str) -> tuple:
    """The paper's order: "§3.1 ..." < "§3.2.1 ..." < "§5.4 ...", then sections without a leading §
    number (shapes, published numbers, invariances, Table 3, the toy run) alphabetically.

    >>> sorted(["Shapes", "§5.4 Regularization", "§3.1 Encoder stack", "§3.2.1 Attention"], key=section_key)
    ['§3.1 Encoder stack', '§3.2.1 Attention', '§5.4 Regularization', 'Shapes']
    """
    match = _SECTION_NUMBER.match(section)
    if match:
        return (0, tuple(int(part) for part in match.group(1).split(".")), section)
    return (1, (), section)


def sections(checks: list[dict]) -> list[tuple[str, list[dict]]]:
    """The checks grouped by section in the paper's order; within a section failures first, then the
    order of the run."""
    grouped: dict[str, list[dict]] = {}
    for check in checks:
        grouped.setdefault(check["section"] or "(no section)", []).append(check)
    return [(name, failures_first(grouped[name])) for name in sorted(grouped, key=section_key)]


def failures_first(checks: list[dict]) -> list[dict]:
    return sorted(checks, key=lambda check: not is_failing(check))


def checks_of(report: dict, impl: str) -> list[dict]:
    return [check for check in report["checks"] if check["impl"] == impl]


def in_paper_order(checks: list[dict]) -> list[dict]:
    """Every check, sections in the paper's order, failures first within each."""
    return [check for _, group in sections(checks) for check in group]


def impl_names(report: dict) -> list[str]:
    return [impl["name"] for impl in report["implementations"]]


def counted_total(counts: dict[str, int]) -> int:
    """Checks whose verdict counts: passed or failing (not not-implemented, blocked, advisory, ...)."""
    return counts.get("passed", 0) + sum(counts.get(status, 0) for status in FAILING)


def failing_total(counts: dict[str, int]) -> int:
    return sum(counts.get(status, 0) for status in FAILING)


def data_of(report: dict, impl: str, name: str) -> tuple[dict, dict] | None:
    """The first check of ``impl`` that recorded ``data[name]``, and that data."""
    for check in checks_of(report, impl):
        if check.get("data") and name in check["data"]:
            return check, check["data"][name]
    return None


def sources(report: dict, check: dict) -> list[str]:
    """"document, section" of each published fact the check compared against, once each."""
    facts = report.get("facts") or {}
    cited = [f"{facts[f]['document']}, {facts[f]['section']}" for f in check.get("facts", []) if f in facts]
    return list(dict.fromkeys(cited))


def first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text and text.strip() else ""


# ------------------------------------------------------------------------------------------------
# The implementation's profile, and whose code answered
# ------------------------------------------------------------------------------------------------


def profile_of(report: dict, impl: str) -> dict | None:
    """The profile of ``impl`` (``conformance.run.report.profile``) when the run had failures, else None."""
    found = (report.get("profile") or {}).get(impl)
    return found if found and found.get("failures") else None


def provenance_of(report: dict, impl: str) -> dict | None:
    """Whose code answered for ``impl`` (``conformance.run.report.provenance_summary``), when the suite supplied or an
    adapter's helper converted anything, else None."""
    found = (report.get("provenance") or {}).get(impl)
    return found if found and (found.get("supplied") or found.get("converted")) else None


def cause_label(cause: dict) -> str:
    """A profile cause's name: the known bug's or pattern's, or "measured" for a description of what was measured
    where no known bug matched (its name is a key, its text says what)."""
    return "measured" if cause.get("kind") == "measured" else cause["name"]


def listed(ids: list[str], shown: int = 4) -> str:
    """"a, b, c and 5 more"."""
    return ", ".join(ids[:shown]) + (f" and {len(ids) - shown} more" if len(ids) > shown else "")


def profile_heading(found: dict) -> str:
    """What the profile's lines below it add up to: "20 failures; 4 causes explain 15, 5 without a known cause"."""
    total, causes, unexplained = found["failures"], found["causes"], len(found["unexplained"])
    explained = total - unexplained
    said = f"{len(causes)} cause{'s' if len(causes) != 1 else ''} explain{'' if len(causes) != 1 else 's'}" \
           f" {explained}" if causes else "no cause found"
    return f"{total} failure{'s' if total != 1 else ''}; {said}" + \
        (f", {unexplained} without a known cause" if unexplained and causes else "")


def published_of(report: dict, impl: str) -> dict:
    """The implementation's published numbers: {reproduced, reproducible, line, sections, unreproduced} ({} when the
    report has none; sections and unreproduced are absent from reports of older suites)."""
    return (report.get("published_numbers") or {}).get(impl) or {}


def published_section_lines(published: dict) -> list[str]:
    """The published numbers reproduced by paper section, one plain line each, aligned."""
    rows = published.get("sections") or []
    if not rows:
        return []
    width = max(len(row["section"]) for row in rows)
    return [f"  {row['section']:<{width}}  {row['reproduced']}/{row['reproducible']}" for row in rows]


def unreproduced_of(report: dict, check: dict) -> list[dict]:
    """The published numbers a check that did not pass leaves unreproduced, each with where it was printed:
    [{id, printed, document, section}]."""
    facts = report.get("facts") or {}
    ids = published_of(report, check.get("impl", "")).get("unreproduced", {}).get(check["id"], [])
    return [{"id": fact_id, **{k: (facts.get(fact_id) or {}).get(k, "") for k in ("printed", "document", "section")}}
            for fact_id in ids]


def profile_lines(report: dict, impl: str) -> list[str]:
    """The profile as plain lines: the one-line summary, then each cause with what it explains."""
    found = profile_of(report, impl)
    if found is None:
        return []
    total = found["failures"]
    lines = [f"profile: {profile_heading(found)}"]  # each cause once, below: the one-line summary is the JSON's
    lines += [f"  {cause_label(cause)} ({cause['explains']} of {total}): {cause['text']}: {listed(cause['checks'])}"
              for cause in found["causes"]]
    if found["unexplained"]:
        lines.append(f"  no known cause ({len(found['unexplained'])} of {total}): {listed(found['unexplained'])}")
    return lines


def provenance_lines(report: dict, impl: str) -> list[str]:
    """Whose code answered, as plain lines: what the suite supplied and what the adapter converted."""
    found = provenance_of(report, impl)
    if found is None:
        return []
    lines = [f"whose code: {found['line']}"]
    lines += [f"  supplied by the suite: {part}: {rec.get('note') or rec.get('by')}"
              for part, rec in found["supplied"].items()]
    for entry in found["converted"]:
        own = f"; the implementation's own convention: {entry['deviation']}" if entry.get("deviation") else ""
        lines.append(f"  converted by the adapter: {entry['part']}: {entry['converter']} ({entry['what']}){own}")
    return lines
