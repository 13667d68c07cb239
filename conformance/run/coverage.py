"""How much of the lessons the suite covers: facts encoded, verified, asked of a candidate, read, reproduced.

"Asked" are the reproducible facts but those no candidate can reproduce (``published.asked_ids``); each is read by
one check, its *home* (``judging/checks/homes.json``: which check, in which paper section, read each fact while
certifying the reference, written by ``tools/index_checks.py``). "Reproduced" is per candidate, from a report: the
facts read and left unreproduced by no check (a check that did not pass leaves unreproduced the facts it names as
differing, or, naming none, every fact it read), out of the facts asked; by section, out of the facts whose home is
in that section.
"""

from __future__ import annotations

import functools
import json
import os

from conformance.paper import published

REPRODUCED_LINE = "published numbers reproduced: {k}/{n}"
HOMES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "judging", "checks", "homes.json")


def reproducible_ids() -> set[str]:
    return {fact_id for fact_id, entry in published.facts().items() if entry["reproducible"]}


@functools.cache
def homes(path: str = HOMES) -> dict[str, dict]:
    """{fact id: {"check", "section"}}: the check that reads each fact asked of a candidate."""
    with open(path, encoding="utf-8") as file:
        return json.load(file)["homes"]


def homes_of(checks: list[dict]) -> dict:
    """The homes file's content from a report's checks (each with its id, section and the facts it read); a fact read
    by two checks is kept under the first (``read_twice`` finds it)."""
    found = {}
    for check in checks:
        for fact_id in sorted(check["facts"]):
            found.setdefault(fact_id, {"check": check["id"], "section": check["section"]})
    return {"about": "the check that reads each published fact asked of a candidate, and its paper section, from the"
                     " reference's report (written by tools/index_checks.py; tests/test_published_homes.py checks it)",
            "impl": "reference", "homes": dict(sorted(found.items()))}


def homes_text(content: dict) -> str:
    """The homes file as written: one line per fact, so that a fact moved to another check is a one-line diff."""
    rows = ",\n".join(f"  {json.dumps(fact_id)}: {json.dumps(home, ensure_ascii=False)}"
                       for fact_id, home in content["homes"].items())
    head = {key: value for key, value in content.items() if key != "homes"}
    return (json.dumps(head, indent=1, ensure_ascii=False)[:-2] + ',\n "homes": {\n' + rows + "\n }\n}\n")


def read_twice(checks: list[dict]) -> dict[str, list[str]]:
    """{fact id: the checks that read it} for every fact read by more than one check: each fact has one home."""
    readers: dict[str, list[str]] = {}
    for check in checks:
        for fact_id in check["facts"]:
            readers.setdefault(fact_id, []).append(check["id"])
    return {fact_id: ids for fact_id, ids in sorted(readers.items()) if len(ids) > 1}


def missed_by(result) -> set[str]:
    """The facts a check leaves unreproduced: none if it passed; those it names (``facts_missed``: an aggregate
    compares each fact and names those that differ, the others it read were equal); else every fact it read."""
    if result.status == "passed":
        return set()
    return set(result.facts_missed or result.facts)


def _counted(results, selected: bool) -> tuple[set[str], set[str]]:
    """(reproduced, asked): the facts read by these results' checks and left unreproduced by none of them, and the
    facts they are out of: every fact asked, or, when the run selected some checks (``-k``), those the selected checks
    read."""
    read = {f for r in results for f in r.facts}
    missed = {f for r in results for f in missed_by(r)}
    asked = set(published.asked_ids())
    if selected:  # what the selected checks read, and what they are the homes of (one may stop before reading it)
        ran = {r.id for r in results}
        asked &= read | {fact_id for fact_id, home in homes().items() if home["check"] in ran}
    return (read - missed) & asked, asked


def reproduced(results, *, selected: bool = False) -> tuple[int, int]:
    """(k, N): the facts asked of a candidate read only by passing checks of these results, out of all asked, or,
    when the run selected some checks (``-k``), out of those the selected checks read."""
    done, asked = _counted(results, selected)
    return len(done), len(asked)


def by_section(results, *, selected: bool = False) -> list[dict]:
    """[{section, reproduced, reproducible}] in the paper's order: each fact counted in its home's section."""
    from conformance.reports.view import section_key

    done, asked = _counted(results, selected)
    counts: dict[str, list[int]] = {}
    for fact_id in asked:
        home = homes().get(fact_id, {}).get("section") or "(no check reads it)"
        counts.setdefault(home, [0, 0])[0] += fact_id in done
        counts[home][1] += 1
    return [{"section": section, "reproduced": k, "reproducible": n}
            for section, (k, n) in sorted(counts.items(), key=lambda item: section_key(item[0]))]


def unreproduced_by_check(results) -> dict[str, list[str]]:
    """{check id: the facts asked it leaves unreproduced, those it is the home of but did not get to read included},
    for every check that did not pass: what a failing candidate's report lists beside each check."""
    done, asked = _counted(results, selected=False)
    home_facts: dict[str, set[str]] = {}
    for fact_id, home in homes().items():
        home_facts.setdefault(home["check"], set()).add(fact_id)
    found = {}
    for result in results:
        if result.status == "passed":
            continue
        unread = home_facts.get(result.id, set()) - set(result.facts)
        missed = sorted(((missed_by(result) | unread) & asked) - done)
        if missed:
            found[result.id] = missed
    return found


def fixture_summary(*, checks: list[dict], verify: bool = True) -> dict:
    """Counts for ``transformer-conformance fixtures``; ``checks``: the report's checks of the reference, each with the
    facts it read at run time (``cli.checks_certifying``)."""
    from conformance.fixtures.verify import coverage as verifier_coverage
    from conformance.fixtures.verify import verify_all

    facts = list(published.facts().values())
    used = {fact_id for check in checks for fact_id in check["facts"]}
    asked = set(published.asked_ids())
    reasons: dict[str, int] = {}
    for entry in facts:
        if entry["reproducible"] and "not_asked" in entry:
            reasons[entry["not_asked"]] = reasons.get(entry["not_asked"], 0) + 1
    summary = {"encoded": len(facts), "reproducible": len(reproducible_ids()), "asked": len(asked),
               "not_asked": dict(sorted(reasons.items(), key=lambda item: (-item[1], item[0]))),
               "used_by_checks": len(used), "asked_used_by_checks": len(used & asked),
               "unread": sorted(asked - used), "read_twice": read_twice(checks),
               "by_section": _read_by_section(checks, asked)}
    if verify:
        results = verify_all(facts)
        summary["verifier"] = verifier_coverage(facts, results)
        summary["failed"] = [r.id for r in results if r.status == "FAILED"]
    return summary


def _read_by_section(checks: list[dict], asked: set[str]) -> list[dict]:
    """[{section, read, asked}]: the facts asked that the checks of each section read, out of those homed there."""
    from conformance.reports.view import section_key

    counts: dict[str, list[int]] = {}
    for fact_id in asked:
        counts.setdefault(homes().get(fact_id, {}).get("section") or "(no check reads it)", [0, 0])[1] += 1
    for check in checks:
        read = len(set(check["facts"]) & asked)
        if read:
            counts.setdefault(check["section"], [0, 0])[0] += read
    return [{"section": section, "read": k, "asked": n}
            for section, (k, n) in sorted(counts.items(), key=lambda item: section_key(item[0]))]
