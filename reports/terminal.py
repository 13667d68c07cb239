"""The terminal report: one line per check (status, id, section, claim) grouped by section, then a summary."""

from __future__ import annotations

from conformance.reports.view import section_key, style
from conformance.results import FAILING, CheckResult, count_statuses


def render(results: list[CheckResult], metadata: dict) -> str:
    lines = []
    for impl in metadata.get("implementations", []):
        mine = [r for r in results if r.impl == impl["name"]]
        lines += _header(impl) + _by_section(mine) + _details(mine) + [_summary(mine), ""]
    return "\n".join(lines) + "\n"


def _header(impl: dict) -> list[str]:
    conv = impl["conventions"]
    lines = [
        "",
        f"== transformer-conformance: {impl['name']} ==",
        f"conventions: mask={conv['mask']} batch_first={conv['batch_first']} dtype={conv['dtype']}"
        f" framework={conv['framework']}",
    ]
    return lines + [f"warning: {w}" for w in impl.get("load_warnings", [])]


def _by_section(results: list[CheckResult]) -> list[str]:
    lines, current = [], None
    for r in sorted(results, key=lambda r: section_key(r.section)):
        if r.section != current:
            current = r.section
            lines.append(f"\n{current or '(no section)'}")
        margin = f"  [margin {r.margin:.2g}]" if r.status == "passed" and r.margin is not None else ""
        lines.append(f"  {style(r.status).label:<7} {r.id:<52} {r.title}{margin}")
    return lines


def _details(results: list[CheckResult]) -> list[str]:
    lines = []
    for r in results:
        if r.status in FAILING:
            lines += _detail(r)
    apart = [r for r in results if r.status in ("advisory", "deviation")]
    if apart:
        lines += ["", "Not counted against conformance (advisory conventions, declared deviations):"]
        for r in apart:
            lines += _detail(r)
    return lines


def _detail(r: CheckResult) -> list[str]:
    lines = ["", f"--- {style(r.status).label} {r.id} ({r.section})", *r.message.splitlines()]
    if r.status == "advisory" and r.claim:
        lines.append(f"  advisory: {r.claim.get('text', '')} (a convention of this suite; --strict counts it)")
    if r.deviation:
        confirmed = "confirmed" if r.deviation.get("confirmed") else "not confirmed by the diagnosis"
        lines.append(f"  declared deviation: {r.deviation['name']} ({confirmed})")
    if r.reproduction:
        lines.append(f"  reproduce: {r.reproduction}")
    return lines


def _summary(results: list[CheckResult]) -> str:
    from conformance.coverage import REPRODUCED_LINE, reproduced

    counts = count_statuses(results)
    parts = [f"{counts[s]} {s.replace('_', ' ')}" for s in counts]
    k, n = reproduced(results)
    return "\n" + ", ".join(parts) + "\n" + REPRODUCED_LINE.format(k=k, n=n)
