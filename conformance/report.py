"""The report model: one run's results and metadata as the plain dict every rendering reads.

Schema ``transformer-conformance/report`` version 1 (docs/report-format.md; the JSON Schema ships as
``reports/report.schema.json``). Top level: schema, schema_version, suite {version, git_sha}, created (UTC,
ISO 8601), fixtures_sha256, environment, the run's metadata (seed, profile, implementations, deviations,
...), summary {impl: {status: count}}, verdict {impl: "conformant" | "not conformant" | "nothing
implemented"}, published_numbers {impl: {reproduced, reproducible, line}}, unsupported {impl: [...]}, facts
{id: {document, section, quote, printed}} (the provenance of every published fact a check compared
against), checks [CheckResult]. Built once per run (``build_report``); the terminal, the JSON file, HTML,
JUnit, Markdown, the badge and Gradescope's results.json all render this dict.
"""

from __future__ import annotations

import datetime

from conformance.results import (
    FAILING,
    RAN,
    SCHEMA_VERSION,
    CheckResult,
    count_statuses,
    environment,
    fixtures_sha256,
    git_sha,
    suite_version,
    unsupported,
)


def verdict(results: list[CheckResult]) -> str:
    counts = count_statuses(results)
    if any(counts[status] for status in FAILING):
        return "not conformant"
    if not any(counts[status] for status in RAN):
        return "nothing implemented"
    return "conformant"


def published_line(results: list[CheckResult], *, selected: bool = False) -> dict:
    from conformance.coverage import REPRODUCED_LINE, reproduced

    k, n = reproduced(results, selected=selected)
    return {"reproduced": k, "reproducible": n, "line": REPRODUCED_LINE.format(k=k, n=n)}


def fact_sources(results: list[CheckResult]) -> dict[str, dict]:
    """Where each published number a check read was printed, so every rendering can cite it."""
    from conformance.published import facts

    known = facts()
    used = sorted({fact_id for r in results for fact_id in r.facts if fact_id in known})
    fields = ("document", "section", "quote", "printed")
    return {fact_id: {k: known[fact_id].get(k) for k in fields} for fact_id in used}


def build_report(results: list[CheckResult], metadata: dict) -> dict:
    """The report of ``results`` (every implementation of the run), with the run's ``metadata``."""
    impls = [impl["name"] for impl in metadata.get("implementations", [])]
    by_impl = {name: [r for r in results if r.impl == name] for name in impls}
    return {
        "schema": "transformer-conformance/report",
        "schema_version": SCHEMA_VERSION,
        "suite": {"version": suite_version(), "git_sha": git_sha()},
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "fixtures_sha256": fixtures_sha256(),
        "environment": environment(),
        **metadata,
        "summary": {name: count_statuses(rs) for name, rs in by_impl.items()},
        "verdict": {name: verdict(rs) for name, rs in by_impl.items()},
        "published_numbers": {name: published_line(rs, selected=bool(metadata.get("selection")))
                              for name, rs in by_impl.items()},
        "unsupported": {name: unsupported(rs) for name, rs in by_impl.items()},
        "facts": fact_sources(results),
        "checks": [r.as_dict() for r in results],
    }
