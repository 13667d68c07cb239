"""The terminal report: one line per check (status, id, section, claim) grouped by section, then a summary."""

from __future__ import annotations

from conformance.reports.safe_text import one_line, visible_text
from conformance.reports.view import (
    declared_supports,
    profile_lines,
    provenance_lines,
    published_section_lines,
    section_key,
    style,
)
from conformance.results import FAILING, CheckResult, count_statuses


def render(report: dict) -> str:
    """The terminal's rendering of a report (``conformance.run.report.build_report``): per implementation, its
    conventions, one line per check grouped by paper section, the details of what did not pass, a summary."""
    lines = []
    checks = [CheckResult.from_dict(c) for c in report["checks"]]
    for impl in report.get("implementations", []):
        name = impl["name"]
        mine = [r for r in checks if r.impl == name]
        lines += _header(impl, report.get("unsupported", {}).get(name, [])) + _by_section(mine) + _details(mine)
        lines += _declared(report) + [_summary(mine, report.get("published_numbers", {}).get(name))]
        lines += profile_lines(report, name) + provenance_lines(report, name) + [""]
    return visible_text("\n".join(lines) + "\n")  # what a submission sent cannot drive the terminal


def _header(impl: dict, unsupported: list[dict]) -> list[str]:
    conv = impl["conventions"]
    lines = [
        "",
        f"== transformer-conformance: {one_line(impl['name'])} ==",
        f"conventions: mask={conv['mask']} batch_first={conv['batch_first']} dtype={conv['dtype']}"
        f" framework={conv['framework']}",
    ]
    declared = declared_supports(conv.get("supports") or {}, conv.get("reasons") or {})
    if declared:
        lines.append("supports only: " + "; ".join(declared))
    for entry in unsupported:
        lines.append(f"could not build: {entry['reason']} ({entry['examples_skipped']} examples skipped in"
                     f" {entry['checks']} checks)")
    if conv.get("ties_embeddings") is False:
        lines.append("tying not verified: load_weights copies E into separate tables (the parameter count decides)")
    return lines + sandbox_lines(impl.get("isolation") or {}) + [f"warning: {one_line(w)}"
                                                                 for w in impl.get("load_warnings", [])]


def sandbox_lines(isolation: dict) -> list[str]:
    """What an isolated worker's sandbox could not do, and what it refused: never left unsaid."""
    lines = []
    if isolation.get("reads_confined") is False:
        lines.append("sandbox: reads not confined (no bubblewrap, and this kernel has no Landlock: the implementation"
                     " could read any file this process can)")
    refused = isolation.get("refused") or []
    if refused:
        shown = "; ".join(f"{r['what']} {one_line(r['path'])}" + (f" ({r['times']} times)" if r["times"] > 1 else "")
                          for r in refused[:5])
        more = isolation.get("refused_total", len(refused)) - sum(r["times"] for r in refused[:5])
        # the worker's own account (an audit hook in its process): what its code says, not what the grader counted
        lines.append(f"sandbox refused (as the worker tells it): {shown}" + (f"; and {more} more" if more > 0 else ""))
    return lines


def _by_section(results: list[CheckResult]) -> list[str]:
    lines, current = [], None
    for r in sorted(results, key=lambda r: section_key(r.section)):
        if r.section != current:
            current = r.section
            lines.append(f"\n{current or '(no section)'}")
        lines.append(f"  {style(r.status).label:<7} {r.id:<52} {r.title}{_annotation(r)}")
    return lines


def _annotation(r: CheckResult) -> str:
    """"[margin 0.0027]", and "15 examples, 4 skipped" where the candidate could not build some examples."""
    notes = [f"margin {r.margin:.2g}"] if r.status == "passed" and r.margin is not None else []
    if r.examples and r.examples.get("skipped"):
        notes.append(f"{r.examples['ran']} examples, {r.examples['skipped']} skipped")
    return f"  [{'; '.join(notes)}]" if notes else ""


def _details(results: list[CheckResult]) -> list[str]:
    lines = []
    for r in results:
        if r.status in FAILING:
            lines += _detail(r)
    why_not = {}
    for r in results:
        if r.status == "not_implemented" and r.message:
            why_not.setdefault(visible_text(r.message).split("\n")[0], []).append(r.id)
    if why_not:
        lines += ["", "Not implemented, and why:"]
        lines += [f"  {reason} ({_count(ids)})" for reason, ids in why_not.items()]
    apart = [r for r in results if r.status in ("advisory", "deviation")]
    if apart:
        lines += ["", "Not counted against conformance (advisory conventions, declared deviations):"]
        for r in apart:
            lines += _detail(r)
    return lines


def _declared(metadata: dict) -> list[str]:
    rows = metadata.get("declared_deviations") or []
    if not rows:
        return []
    lines = ["", "Declared deviations:"]
    for row in rows:
        if not row["observed"]:
            lines.append(f"  NOT OBSERVED {row['name']}: no failure shows it; is the declaration still true?")
            continue
        confirmed = f", confirmed by the diagnosis in {len(row['confirmed_by'])}" if row["confirmed_by"] else \
            ", not confirmed by the diagnosis"
        lines.append(f"  observed {row['name']}: explains {len(row['checks'])} checks{confirmed}")
    return lines


def _count(ids: list[str]) -> str:
    return ids[0] if len(ids) == 1 else f"{len(ids)} checks"


def _detail(r: CheckResult) -> list[str]:
    lines = ["", f"--- {style(r.status).label} {r.id} ({r.section})", *message_lines(r.message)]
    if r.status == "advisory" and r.claim:
        lines.append(f"  advisory: {r.claim.get('text', '')} (a convention of this suite; --strict counts it)")
    if r.likely_cause and "likely cause" not in r.message and "measured (" not in r.message:
        lines.append(f"  likely cause: {one_line(r.likely_cause)}")  # one the report gave (an aggregate's inherited)
    if r.deviation:
        confirmed = "confirmed" if r.deviation.get("confirmed") else "not confirmed by the diagnosis"
        lines.append(f"  declared deviation: {r.deviation['name']} ({confirmed})")
    if r.reproduction:
        lines.append(f"  reproduce: {one_line(r.reproduction)}")
    return lines


def message_lines(message: str) -> list[str]:
    """A check's message as lines: split at newlines only (a carriage return stays visible, not a line of its own);
    every line after the first indented, and blank lines one at a time, so that no text a submission put in an
    exception reads as a line of the report's own (a fake summary, "score: 101 / 101", a screenful of blanks)."""
    first, *rest = visible_text(message).split("\n")
    lines = [first]
    for line in rest:
        if not line.strip():
            if lines[-1]:
                lines.append("")
            continue
        lines.append(line if line[:1].isspace() else f"  {line}")
    return lines


def _summary(results: list[CheckResult], published: dict | None) -> str:
    counts = count_statuses(results)
    parts = [f"{counts[s]} {s.replace('_', ' ')}" for s in counts]
    by_section = published_section_lines(published or {})
    return "\n" + ", ".join(parts) + ("\n" + published["line"] if published else "") + \
        ("\n" + "\n".join(["by paper section:", *by_section]) if by_section else "")
