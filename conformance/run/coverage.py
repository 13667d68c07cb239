"""How much of the lessons the suite covers: facts encoded, verified, used by a check, reproduced.

"Used" is what the checks read with ``published.value`` while certifying the reference (the
``fixtures`` command runs them).
"Reproduced" is per candidate, from a report: the facts read by checks that passed, and by none that
failed, out of the reproducible facts.
"""

from __future__ import annotations

from conformance.paper import published

REPRODUCED_LINE = "published numbers reproduced: {k}/{n}"


def reproducible_ids() -> set[str]:
    return {fact_id for fact_id, entry in published.facts().items() if entry["reproducible"]}


def reproduced(results, *, selected: bool = False) -> tuple[int, int]:
    """(k, N): reproducible facts read only by passing checks of these results, out of all reproducible ones,
    or, when the run selected some checks (``-k``), out of those the selected checks read."""
    passed = {f for r in results if r.status == "passed" for f in r.facts}
    not_passed = {f for r in results if r.status != "passed" for f in r.facts}
    reproducible = reproducible_ids()
    if selected:
        reproducible &= passed | not_passed
    return len((passed - not_passed) & reproducible), len(reproducible)


def fixture_summary(*, used: set[str], verify: bool = True) -> dict:
    """Counts for ``transformer-conformance fixtures``; ``used``: fact ids read by checks at run time
    (``cli.facts_read_by_checks``)."""
    from conformance.fixtures.verify import coverage as verifier_coverage
    from conformance.fixtures.verify import verify_all

    facts = list(published.facts().values())
    summary = {"encoded": len(facts), "reproducible": len(reproducible_ids()), "used_by_checks": len(used),
               "reproducible_used_by_checks": len(used & reproducible_ids())}
    if verify:
        results = verify_all(facts)
        summary["verifier"] = verifier_coverage(facts, results)
        summary["failed"] = [r.id for r in results if r.status == "FAILED"]
    return summary
