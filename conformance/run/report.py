"""The report model: one run's results and metadata as the plain dict every rendering reads.

Schema ``transformer-conformance/report`` version 1 (docs/report-format.md; the JSON Schema ships as
``reports/report.schema.json``). Top level: schema, schema_version, suite {version, git_sha}, created (UTC,
ISO 8601), fixtures_sha256, environment, the run's metadata (seed, profile, implementations, deviations,
...), summary {impl: {status: count}}, verdict {impl: "conformant" | "not conformant" | "nothing
implemented"}, profile {impl: {failures, causes, unexplained, line}} (the deviations the run confirmed, each
with the failures it explains), provenance {impl: {own, supplied, converted}} (whose code answered: the
implementation's, or the suite's helpers'), published_numbers {impl: {reproduced, reproducible, line, sections,
unreproduced}} (in all, by paper section, and per check that did not pass),
unsupported {impl: [...]}, facts {id: {document, section, quote, printed}} (the provenance of every published
fact a check compared against), checks [CheckResult]. Built once per run (``build_report``); the terminal, the
JSON file, HTML, JUnit, Markdown, the badge and Gradescope's results.json all render this dict.
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
    """How many published numbers the implementation reproduced, in all and by paper section, and the ones each
    check that did not pass leaves unreproduced."""
    from conformance.run.coverage import REPRODUCED_LINE, by_section, reproduced, unreproduced_by_check

    k, n = reproduced(results, selected=selected)
    return {"reproduced": k, "reproducible": n, "line": REPRODUCED_LINE.format(k=k, n=n),
            "sections": by_section(results, selected=selected), "unreproduced": unreproduced_by_check(results)}


def fact_sources(results: list[CheckResult]) -> dict[str, dict]:
    """Where each published number a check read, or left unreproduced, was printed, so every rendering can cite it."""
    from conformance.paper.published import facts
    from conformance.run.coverage import unreproduced_by_check

    known = facts()
    missed = {fact_id for ids in unreproduced_by_check(results).values() for fact_id in ids}
    used = sorted({fact_id for r in results for fact_id in r.facts if fact_id in known} | missed)
    fields = ("document", "section", "quote", "printed")
    return {fact_id: {k: known[fact_id].get(k) for k in fields} for fact_id in used}


PROFILED = (*FAILING, "deviation")
"""The statuses a profile explains: what failed, counted or declared."""


def cause_names(result: CheckResult) -> list[str]:
    """The deviations that explain a non-passing check: its confirmed diagnosis (each part of a combination),
    its structural patterns, and the deviation it was declared as (a file's entry, or a conversion's)."""
    from conformance.judging.deviations import named_by_diagnosis

    declared = (result.deviation or {}).get("names", [])
    return sorted(named_by_diagnosis(result) | set(declared))


def cause_text(name: str, results: list[CheckResult]) -> str:
    """A deviation in words: the catalogue's description of the bug, else the structural pattern's."""
    from conformance.diagnosis import PATTERNS

    for result in results:
        for match in result.diagnosis or []:
            if match.get("mutant") == name and match.get("bug"):
                return match["bug"].rstrip(".")
    return PATTERNS.get(name, name.replace("_", " "))


def measured_causes(result: CheckResult) -> dict[str, str]:
    """The descriptions of a non-passing check (what was measured where no known bug matches): key -> text."""
    return {found["key"]: found["text"] for found in result.descriptions or []}


def inherited_causes(failures: list[CheckResult]) -> dict[str, tuple[str, list[CheckResult]]]:
    """For each failure nothing explains that reads several published facts (an aggregate of a section's printed
    numbers, which no question of its own can diagnose): how it is related ("facts" or "section") and the failures
    with a cause that read one of the same facts, else those of its paper section. The aggregate fails for their
    causes."""
    explained = [r for r in failures if cause_names(r) or measured_causes(r)]
    found = {}
    for result in failures:
        if result in explained or len(result.facts) < 2:
            continue
        same_facts = [s for s in explained if set(s.facts) & set(result.facts)]
        same_section = [s for s in explained if s.section == result.section]
        if same_facts or same_section:
            found[result.id] = ("facts", same_facts) if same_facts else ("section", same_section)
    return found


def profile(results: list[CheckResult], inherited: dict | None = None) -> dict:
    """The implementation's profile: every deviation the run confirmed with the failures it explains, most first,
    then every measured description with the failures it describes (``kind`` "named" or "measured"), and the
    failures neither explains, so a report with 30 failures says in one line that it has two causes. An aggregate
    check of published numbers inherits the causes of the checks that read the same facts (``inherited_causes``)."""
    failures = [r for r in results if r.status in PROFILED]
    inherited = inherited_causes(failures) if inherited is None else inherited
    explained: dict[str, list[str]] = {}
    measured: dict[str, list[str]] = {}
    texts: dict[str, str] = {}
    for result in failures:
        sources = inherited[result.id][1] if result.id in inherited else [result]
        for name in sorted({name for source in sources for name in cause_names(source)}):
            explained.setdefault(name, []).append(result.id)
        for key, text in {k: t for source in sources for k, t in measured_causes(source).items()}.items():
            measured.setdefault(key, []).append(result.id)
            texts.setdefault(key, text)
    causes = [{"name": name, "kind": "named", "text": cause_text(name, failures), "explains": len(ids), "checks": ids}
              for name, ids in sorted(explained.items(), key=lambda item: (-len(item[1]), item[0]))]
    causes += [{"name": key, "kind": "measured", "text": texts[key], "explains": len(ids), "checks": ids}
               for key, ids in sorted(measured.items(), key=lambda item: (-len(item[1]), item[0]))]
    unexplained = [r.id for r in failures if not cause_names(r) and not measured_causes(r) and r.id not in inherited]
    return {"failures": len(failures), "causes": causes, "unexplained": unexplained,
            "line": profile_line(len(failures), causes, unexplained)}


def inherited_cause_line(related: str, sources: list[CheckResult]) -> str:
    """What an aggregate check's card says of its cause: what explains the checks of the same numbers (``related``
    "facts") or of its section ("section"), each cause once with the checks it explains."""
    by_cause: dict[str, list[str]] = {}
    for source in sources:
        by_cause.setdefault(source.likely_cause or "a cause named on the check", []).append(source.id)
    said = "; ".join(f"{cause} ({', '.join(ids[:3])}{' and more' if len(ids) > 3 else ''})"
                     for cause, ids in by_cause.items())
    whose = "the numbers it reads fail in their own checks too" if related == "facts" else \
        "the other checks of its section fail"
    return f"{whose}, for: {said}"


def profile_line(failures: int, causes: list[dict], unexplained: list[str]) -> str:
    """"pre_norm: explains 13 of 13 failures"; "measured: <what>: describes 2 of 13"; "; nothing explains 2"."""
    if not failures:
        return "no failures"
    named = [f"{cause['name']}: explains {cause['explains']} of {failures} failures" for cause in causes
             if cause.get("kind", "named") == "named"]
    measured = [f"measured: {cause['text']}: describes {cause['explains']} of {failures}" for cause in causes
                if cause.get("kind") == "measured"]
    rest = [f"nothing known explains {len(unexplained)} of {failures}"] if unexplained else []
    return "; ".join(named + measured + rest)


def provenance_summary(results: list[CheckResult], implementation: dict) -> dict:
    """Whose code answered: each part supplied by the suite's helpers (known before the run, or seen in a call)
    with who supplied it and how, each conversion the adapter's helpers made, and the parts that are the
    implementation's own."""
    from conformance.provenance import distinct

    supplied = dict(implementation.get("supplied_parts") or {})
    converted = []
    for result in results:
        ledger = result.provenance or {}
        for part, rec in (ledger.get("supplied") or {}).items():
            supplied.setdefault(part, rec)
        converted += ledger.get("converted") or []
    parts = implementation.get("provided_parts") or []
    own = [part for part in parts if part not in supplied]
    credited = sum(r.status == "passed" for r in results)
    not_credited = sum(r.status == "supplied" for r in results)
    return {"own": own, "supplied": supplied, "converted": distinct(converted),
            "line": f"{len(own)} of {len(parts)} parts the implementation's own; {credited} checks credited to it,"
                    f" {not_credited} passed on code the suite supplied (not credited)"}


def build_report(results: list[CheckResult], metadata: dict) -> dict:
    """The report of ``results`` (every implementation of the run), with the run's ``metadata``."""
    impls = [impl["name"] for impl in metadata.get("implementations", [])]
    by_impl = {name: [r for r in results if r.impl == name] for name in impls}
    inherited = {name: inherited_causes([r for r in rs if r.status in PROFILED]) for name, rs in by_impl.items()}
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
        "profile": {name: profile(rs, inherited[name]) for name, rs in by_impl.items()},
        "provenance": {impl["name"]: provenance_summary(by_impl[impl["name"]], impl)
                       for impl in metadata.get("implementations", [])},
        "published_numbers": {name: published_line(rs, selected=bool(metadata.get("selection")))
                              for name, rs in by_impl.items()},
        "unsupported": {name: unsupported(rs) for name, rs in by_impl.items()},
        "facts": fact_sources(results),
        "checks": [_with_inherited_cause(r, inherited) for r in results],
    }


def _with_inherited_cause(result: CheckResult, inherited: dict) -> dict:
    """The check as the report keeps it; an aggregate check without a cause of its own says the causes of the checks
    that read the same facts, so that its card agrees with the profile that counts it under them."""
    record = result.as_dict()
    related = inherited.get(result.impl, {}).get(result.id)
    if related and not record.get("likely_cause"):
        record["likely_cause"] = inherited_cause_line(*related)
    return record
