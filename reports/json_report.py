"""The JSON report, schema ``transformer-conformance/report`` version 1 (docs/report-format.md).

Top level: schema, schema_version, suite {version, git_sha}, created (UTC, ISO 8601), fixtures_sha256,
environment {python, platform, machine, versions}, seed, hypothesis_profile, torch_threads, duration_s,
implementations [{name, conventions, provided_parts, load_warnings}], summary {impl: {status: count}},
verdict {impl: "conformant" | "not conformant" | "nothing implemented"},
published_numbers {impl: {reproduced, reproducible, line}}, facts {id: {document, section, quote, printed}}
(the provenance of every published fact a check compared against), checks [CheckResult].
The JSON Schema of this format ships beside this module: ``report.schema.json``.
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


def published_line(results: list[CheckResult]) -> dict:
    from conformance.coverage import REPRODUCED_LINE, reproduced

    k, n = reproduced(results)
    return {"reproduced": k, "reproducible": n, "line": REPRODUCED_LINE.format(k=k, n=n)}


def fact_sources(results: list[CheckResult]) -> dict[str, dict]:
    """Where each published number a check read was printed, so every rendering can cite it."""
    from conformance.published import facts

    known = facts()
    used = sorted({fact_id for r in results for fact_id in r.facts if fact_id in known})
    fields = ("document", "section", "quote", "printed")
    return {fact_id: {k: known[fact_id].get(k) for k in fields} for fact_id in used}


def build_report(results: list[CheckResult], metadata: dict) -> dict:
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
        "published_numbers": {name: published_line(rs) for name, rs in by_impl.items()},
        "unsupported": {name: unsupported(rs) for name, rs in by_impl.items()},
        "facts": fact_sources(results),
        "checks": [r.as_dict() for r in results],
    }
