"""Evidence ranks: a name that a passing check contradicts is withdrawn.

A known bug is named when its answer equals the candidate's on a failing check and on a second problem. The
run holds more evidence than that one check: every check the candidate passed. A known bug that fails one of
them (the catalogue says which: ``implementations/mutants/expected.toml``) cannot be what the candidate computes
there, so the name is withdrawn and the check says which passing check contradicts it. A parameter count that
only arithmetic "confirms" is the usual case: the count matches a known bug's, and the model-level check the
same bug fails passed.

Only single known bugs are judged: a combination's parts change each other's effects, so what one part fails
alone says nothing of the combination.
"""

from __future__ import annotations

import functools

WITHDRAWN = "withdrawn"


@functools.cache
def _fails() -> dict[str, frozenset[str]]:
    """{mutant: the checks certifying it fails (--no-training)}; empty when the catalogue is absent."""
    try:
        from conformance.implementations import mutants

        return {name: table.caught_by | table.errored for name, table in mutants.expected().items()
                if not table.training}
    except Exception:  # noqa: BLE001 - no catalogue, nothing to contradict
        return {}


def contradictions(mutant: str, passed: set[str]) -> list[str]:
    """The passing checks that ``mutant`` fails, sorted."""
    return sorted(_fails().get(mutant, frozenset()) & passed)


def withdraw_contradicted(results: list) -> None:
    """For each failing check whose first match is a single known bug that a passing check of the same
    implementation contradicts: the match marked ``contradicted_by``, the likely cause withdrawn, the message
    told why (once; idempotent)."""
    passed: dict[str, set[str]] = {}
    for result in results:
        if result.status == "passed":
            passed.setdefault(result.impl, set()).add(result.id)
    for result in results:
        if result.status not in ("failed", "error") or not result.diagnosis:
            continue
        for match in result.diagnosis:
            if match.get("mutants") or match.get("contradicted_by"):
                continue
            against = contradictions(match["mutant"], passed.get(result.impl, set()))
            if against:
                match["contradicted_by"] = against
        first = result.diagnosis[0]
        if first.get("contradicted_by") and f"mutant:{first['mutant']}" in (result.likely_cause or ""):
            result.likely_cause = None
            result.message = _unclaimed(result.message, first["mutant"])
            shown = ", ".join(first["contradicted_by"][:3]) + (" ..." if len(first["contradicted_by"]) > 3 else "")
            result.message += (f"\n  {WITHDRAWN}: mutant:{first['mutant']} fails {shown}, which passed in this run,"
                               " so it is not what the candidate computes; what this check asks, the candidate"
                               " answers as it does (on two problems): a deviation of that kind, confined to what"
                               " this check asks, is likely")
            stands = next((match for match in result.diagnosis[1:]
                           if not match.get("mutants") and not match.get("contradicted_by")), None)
            if stands is not None:
                result.likely_cause = f"{stands['bug']} (mutant:{stands['mutant']})"
                result.message += (f"\n  likely cause, of the known bugs that answer this check alike and that no"
                                   f" passing check contradicts: {result.likely_cause}")


def _unclaimed(message: str, mutant: str) -> str:
    """The message with the withdrawn name's "likely cause" line restated as what it is: this check's answer only,
    no longer a cause."""
    lines = message.split("\n")
    for i, line in enumerate(lines):
        if line.lstrip().startswith("likely cause") and f"(mutant:{mutant})" in line:
            head, _, rest = line.partition("likely cause")
            lines[i] = head + "answers this check as" + rest.split(":", 1)[-1].split(", confirmed on")[0]
    return "\n".join(lines)


def standing(diagnosis: list[dict]) -> list[dict]:
    """The matches no passing check contradicts."""
    return [match for match in diagnosis or [] if not match.get("contradicted_by")]
