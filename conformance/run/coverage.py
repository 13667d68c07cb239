"""How much of the lessons the suite covers: facts encoded, verified, used by a check, reproduced.

"Used" is what the checks read with ``published.value`` while certifying the reference (the
``fixtures`` command runs them); ``used_fact_ids`` is a quick static approximation from the check
modules: every fact id they name, and every fact of a kind they ask for with ``published.of_kind``.
"Reproduced" is per candidate, from a report: the facts read by checks that passed, and by none that
failed, out of the reproducible facts.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conformance.paper import published

REPRODUCED_LINE = "published numbers reproduced: {k}/{n}"


def _check_sources() -> list[Path]:
    import conformance.judging.checks

    return sorted(Path(conformance.judging.checks.__file__).parent.glob("test_*.py"))


def _string_constants(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)}


def _kinds_asked(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "of_kind"
        and node.args and isinstance(node.args[0], ast.Constant)
    }


def used_fact_ids() -> set[str]:
    facts = published.facts()
    used: set[str] = set()
    for path in _check_sources():
        used |= _string_constants(path) & facts.keys()
        for kind in _kinds_asked(path):
            used |= {
                entry["id"] for entry in published.of_kind(kind)
                if kind != "shape" or entry["args"].get("tensor") in published.OBSERVED_TENSORS
            }
    return used


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


def fixture_summary(*, verify: bool = True, used: set[str] | None = None) -> dict:
    """Counts for ``transformer-conformance fixtures``; ``used``: fact ids read by checks at run time
    (``cli.facts_read_by_checks``), else the static reading of the check modules."""
    from conformance.fixtures.verify import coverage as verifier_coverage
    from conformance.fixtures.verify import verify_all

    facts = list(published.facts().values())
    used = used_fact_ids() if used is None else used
    summary = {"encoded": len(facts), "reproducible": len(reproducible_ids()), "used_by_checks": len(used),
               "reproducible_used_by_checks": len(used & reproducible_ids())}
    if verify:
        results = verify_all(facts)
        summary["verifier"] = verifier_coverage(facts, results)
        summary["failed"] = [r.id for r in results if r.status == "FAILED"]
    return summary
