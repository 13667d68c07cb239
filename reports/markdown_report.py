"""The Markdown report, for a pull-request comment: GitHub Flavored Markdown (github.github.com/gfm), whose
comments hold at most 65,536 characters. The report stays under ``LIMIT`` however many checks fail: a
summary table, the failures with their diagnosis (each message cut to ``MESSAGE_LINES`` lines) in the
paper's order until the budget is spent, then a line that says how many were left out and where they are.
"""

from __future__ import annotations

from conformance.reports.safe_text import markdown_cell, visible_text
from conformance.reports.view import (
    checks_of,
    counted_total,
    impl_names,
    in_paper_order,
    is_failing,
    profile_lines,
    provenance_lines,
    published_of,
    sections,
    sources,
    style,
    unreproduced_of,
)

LIMIT = 65_000
MESSAGE_LINES = 25
MESSAGE_CHARS = 3_000


def render(report: dict, *, limit: int = LIMIT) -> str:
    head = [_title(report), "", *_summary_table(report), "", *_profiles(report)]
    tail = [*_section_tables(report), "", _footer(report)]
    budget = limit - _size(head) - _size(tail) - 200  # 200: the "left out" line
    failures = [(name, c) for name in impl_names(report) for c in in_paper_order(checks_of(report, name))
                if is_failing(c)]
    body, shown = [], 0
    if failures:
        body.append(f"### Failures ({len(failures)})")
        for name, check in failures:
            entry = _failure(report, check, name if len(impl_names(report)) > 1 else None)
            if _size(body) + _size(entry) > budget:
                break
            body += entry
            shown += 1
        if shown < len(failures):
            body.append(f"\n*{len(failures) - shown} more failures left out to stay under {limit:,} characters:"
                        " see the HTML or JSON report.*")
    text = "\n".join(head + body + tail) + "\n"
    text = visible_text(text)  # whatever a field let through
    return text if len(text) < limit else text[: limit - 80] + "\n\n*(cut to stay under the comment limit)*\n"


def _size(lines: list[str]) -> int:
    return sum(len(line) + 1 for line in lines)


def _title(report: dict) -> str:
    verdicts = set(report["verdict"].values())
    overall = "not conformant" if "not conformant" in verdicts else "conformant" if verdicts == {"conformant"} \
        else "nothing implemented"
    return f"## transformer-conformance: {', '.join(_inline(name) for name in impl_names(report))} — **{overall}**"


def _summary_table(report: dict) -> list[str]:
    statuses = list(dict.fromkeys(s for summary in report["summary"].values() for s in summary))
    lines = ["| implementation | verdict | passed / counted | " + " | ".join(s.replace("_", " ") for s in statuses)
             + " |", "|---|---|---|" + "---|" * len(statuses)]
    for name in impl_names(report):
        counts = report["summary"].get(name, {})
        lines.append(f"| `{_inline(name)}` | {report['verdict'].get(name, '?')} | {counts.get('passed', 0)} /"
                     f" {counted_total(counts)} | " + " | ".join(str(counts.get(s, 0)) for s in statuses) + " |")
    published = [p["line"] for p in (report.get("published_numbers") or {}).values()]
    return lines + ([""] + [f"{line}" for line in dict.fromkeys(published)] if published else [])


def _profiles(report: dict) -> list[str]:
    """Per implementation: its profile (the deviations confirmed, each with the failures it explains) and whose
    code answered (what the suite supplied, what the adapter converted), as lists under the summary."""
    out = []
    for name in impl_names(report):
        lines = profile_lines(report, name) + provenance_lines(report, name)
        if not lines:
            continue
        if len(impl_names(report)) > 1:
            out.append(f"**`{name}`**")
        out += [("  " if line.startswith("  ") else "") + f"- {_inline(line)}" for line in lines] + [""]
    return out


def _failure(report: dict, check: dict, impl: str | None) -> list[str]:
    message = check.get("message") or ""
    lines = message.splitlines()
    cut = "\n".join(lines[:MESSAGE_LINES])[:MESSAGE_CHARS]
    if cut != message:
        cut += f"\n... ({len(lines)} lines in all: see the HTML or JSON report)"
    where = f" [{_inline(impl)}]" if impl else ""
    entry = [f"<details open><summary><b>{style(check['status']).label}</b> <code>{check['id']}</code>{where}"
             f" — {_inline(check['title'])} ({_inline(check['section'])})</summary>", "", "```text",
             visible_text(cut).replace("```", "'''"), "```"]
    if check.get("likely_cause"):
        entry.append(f"**likely cause:** {_inline(check['likely_cause'])}  ")
    if check.get("diagnosis"):
        named = ", ".join(f"`mutant:{d['mutant']}` ({_inline(d.get('bug') or '')})" for d in check["diagnosis"][:3])
        entry.append(f"**diagnosis** (matches these known bugs, closest first): {named}  ")
    if check.get("descriptions"):
        measured = "; ".join(_inline(d["text"]) for d in check["descriptions"][:3])
        entry.append(f"**measured** (no known bug matches): {measured}  ")
    missed = unreproduced_of(report, check)
    if missed:
        shown = ", ".join(f"`{f['id']}` ({_inline(f['printed'])})" for f in missed[:6])
        entry.append(f"**published numbers not reproduced** ({len(missed)}): {shown}"
                     f"{' ...' if len(missed) > 6 else ''}  ")
    cited = sources(report, check)
    if cited:
        entry.append(f"**golden values from:** {_inline('; '.join(cited))}  ")
    if check.get("reproduction"):
        entry.append(f"**reproduce:** `{check['reproduction']}`")
    return entry + ["", "</details>", ""]


def _inline(text: str) -> str:
    """One line, with Markdown's and HTML's active characters defused."""
    return markdown_cell(text)


def _section_tables(report: dict) -> list[str]:
    out = []
    for name in impl_names(report):
        reproduced = {row["section"]: f"{row['reproduced']}/{row['reproducible']}"
                      for row in published_of(report, name).get("sections") or []}
        out += ["<details><summary>Checks by paper section" + (f" ({name})" if len(impl_names(report)) > 1 else "")
                + "</summary>", "", "| section | checks | published numbers reproduced | not passed |",
                "|---|---|---|---|"]
        for section, group in sections(checks_of(report, name)):
            others = [f"{style(c['status']).label} `{c['id']}`" for c in group if c["status"] != "passed"]
            out.append(f"| {_inline(section)} | {len(group)} | {reproduced.get(section, '')} | {', '.join(others[:6])}"
                       f"{' ...' if len(others) > 6 else ''} |")
        out += ["", "</details>"]
    return out


def _footer(report: dict) -> str:
    env = report.get("environment", {})
    dtype = f", dtype {report['dtype']}" if report.get("dtype") else ""
    return (f"<sub>seed {report.get('seed')}{dtype}, hypothesis {report.get('hypothesis_profile')}, suite"
            f" {report.get('suite', {}).get('version')}, Python {env.get('python')},"
            f" torch {env.get('versions', {}).get('torch')}</sub>")
