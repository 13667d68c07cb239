"""Every published number a candidate can reproduce is asked of it by one check: its home.

``fixtures/published.toml`` marks the reproducible facts no candidate can reproduce (``not_asked``, with the key of
its reason); every other reproducible fact must be read (``check.published``) by exactly one check while certifying
the reference, and ``judging/checks/homes.json`` (written by ``tools/index_checks.py``) must say which, since the
reports count the facts reproduced by section from it.
"""

import pytest
from conftest import shared_run

from conformance.paper import published
from conformance.run import coverage


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    return shared_run(tmp_path_factory, "reference", "--no-training").report


def read_by(checks: list[dict]) -> set[str]:
    return {fact_id for check in checks for fact_id in check["facts"]}


def test_every_fact_asked_is_read_by_a_check(reference):
    unread = sorted(published.asked_ids() - read_by(reference["checks"]))
    assert not unread, (f"{len(unread)} reproducible facts no check reads: read each in its section's check"
                        f" (check.published), or mark it not_asked in published.toml with the reason: {unread}")


def test_no_fact_is_read_by_two_checks(reference):
    assert coverage.read_twice(reference["checks"]) == {}, "each published fact has one home: one check reads it"


def test_no_check_reads_a_fact_no_candidate_is_asked_for(reference):
    marked = sorted(fact_id for fact_id in read_by(reference["checks"]) if "not_asked" in published.fact(fact_id))
    assert not marked, f"read by a check, yet marked not_asked in published.toml: {marked}"


def test_the_homes_file_says_which_check_reads_each_fact(reference):
    shipped, now = coverage.homes(), coverage.homes_of(reference["checks"])["homes"]
    moved = sorted(f for f in set(shipped) | set(now) if shipped.get(f) != now.get(f))
    assert not moved, f"judging/checks/homes.json is stale for {moved}: run python tools/index_checks.py"


def test_the_reference_reproduces_every_fact_asked_in_every_section(reference):
    numbers = reference["published_numbers"]["reference"]
    assert numbers["reproduced"] == numbers["reproducible"] == len(published.asked_ids())
    assert numbers["line"] == f"published numbers reproduced: {numbers['reproducible']}/{numbers['reproducible']}"
    assert sum(row["reproducible"] for row in numbers["sections"]) == numbers["reproducible"]
    assert [row for row in numbers["sections"] if row["reproduced"] != row["reproducible"]] == []
    assert numbers["unreproduced"] == {}


# -- the guards fail when they should ------------------------------------------------------------------


def test_a_fact_no_check_reads_is_found(reference):
    checks = [dict(check, facts=[f for f in check["facts"] if f != "pe.heatmap.shape"])
              for check in reference["checks"]]
    summary = coverage.fixture_summary(checks=checks, verify=False)
    assert summary["unread"] == ["pe.heatmap.shape"]
    assert summary["asked_used_by_checks"] == summary["asked"] - 1


def test_a_fact_read_by_two_checks_is_found(reference):
    checks = [dict(check, facts=[*check["facts"], "pe.heatmap.shape"]) if check["id"] == "published_wavelengths"
              else check for check in reference["checks"]]
    assert coverage.read_twice(checks) == {"pe.heatmap.shape": ["published_positional_encoding_values",
                                                                "published_wavelengths"]}


def test_every_reason_marked_is_one_the_file_gives():
    reasons = published.not_asked_reasons()
    marked = {fact_id: entry["not_asked"] for fact_id, entry in published.facts().items() if "not_asked" in entry}
    assert marked, "the reproducible facts no candidate can reproduce should say why"
    assert {fact_id: reason for fact_id, reason in marked.items() if reason not in reasons} == {}
    assert all(published.fact(fact_id)["reproducible"] for fact_id in marked), "only a reproducible fact is asked"
    assert set(marked.values()) == set(reasons), "a reason no fact gives"


def test_the_fixtures_command_counts_the_facts_asked_and_read_by_section(reference, monkeypatch, capsys):
    from conformance import cli

    monkeypatch.setattr(cli, "checks_certifying", lambda impl: reference["checks"])  # the reference's run, once
    assert cli.main(["fixtures"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    asked = len(published.asked_ids())
    assert f"asked of a candidate:           {asked} (the reproducible but 21 no candidate can reproduce:" in out
    assert f"used by at least one check:     {asked} ({asked} of the {asked} asked;" in out
    counts = [row.split()[-1].split("/") for row in out.split("by section (read / asked):\n")[1].splitlines()]
    assert counts and all(read == of for read, of in counts), "the reference's checks read every fact of each section"
    assert sum(int(of) for _, of in counts) == asked
