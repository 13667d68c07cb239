"""conformance/judging/twins.py names real checks, and flags a twin only when its published-number check passed."""

import re

from conformance.cli import main
from conformance.judging.twins import HARD_CODED, TWINS, annotate_hard_coding
from conformance.results import CheckResult


def collected_check_ids(capsys) -> set[str]:
    main(["list", "reference"])
    names = re.findall(r"::test_(\w+)\[", capsys.readouterr().out)
    return set(names)


def test_every_published_check_and_twin_named_in_twins_exists(capsys):
    ids = collected_check_ids(capsys)
    named = set(TWINS) | {twin for twins in TWINS.values() for twin in twins}
    assert named - ids == set()


def result(check_id: str, status: str) -> CheckResult:
    return CheckResult(id=check_id, impl="x", title="", section="", status=status, message="m")


LOOKED_UP = {"lookup": {"looked_up": True, "frozen": 0, "jumps": 15, "points": 15}}
COMPUTED = {"lookup": {"looked_up": False, "frozen": 1, "jumps": 0, "points": 15}}


def test_a_failing_twin_is_flagged_only_when_the_published_check_passed_and_no_known_bug_explains_it():
    hard_coded = [result("published_learning_rates", "passed"), result("lrate_matches_formula_for_any_step", "failed")]
    buggy = [result("published_learning_rates", "failed"), result("lrate_matches_formula_for_any_step", "failed")]
    explained = [result("published_layer_norm_example", "passed"), result("layer_norm_matches_formula", "failed")]
    explained[1].diagnosis = [{"mutant": "layer_norm_eps_outside_root", "bug": "eps outside the root"}]
    # FSMT's frequencies: position 0 is right whatever the frequencies, the other printed values are not
    partly = [result("pe_position_0_is_sin_0_and_cos_0", "passed"), result("pe_matches_published_values", "failed"),
              result("pe_matches_formula_for_any_size", "failed")]
    for results in (hard_coded, buggy, explained, partly):
        results[-1].data = dict(LOOKED_UP)
        annotate_hard_coding(results)
    assert hard_coded[1].likely_cause == HARD_CODED and "published_learning_rates passed" in hard_coded[1].message
    assert "15 jumped" in hard_coded[1].message
    assert all(r[-1].likely_cause is None and HARD_CODED not in r[-1].message for r in (buggy, explained, partly))


def test_a_twin_that_fails_where_the_published_example_cannot_show_it_is_not_called_hard_coded():
    """The published example passes and the twin fails, but the published inputs moved a little move the answer as
    a formula's do (a bug of a second row, of padding, of one step): described like any other failure."""
    honest = [result("published_layer_norm_example", "passed"), result("layer_norm_matches_formula", "failed")]
    honest[1].data = dict(COMPUTED)
    unprobed = [result("published_learning_rates", "passed"), result("lrate_matches_formula_for_any_step", "failed")]
    for results in (honest, unprobed):
        annotate_hard_coding(results)
        assert results[1].likely_cause is None and HARD_CODED not in results[1].message


def test_the_class_summary_accuses_no_one_without_evidence_of_a_look_up():
    from conformance.grading.class_summary import student_row

    def report(data):
        checks = [result("published_layer_norm_example", "passed"), result("layer_norm_matches_formula", "failed")]
        checks[1].data = data
        annotate_hard_coding(checks)
        return {"submission": {"name": "ada"}, "checks": [c.as_dict() for c in checks], "verdict": {"x": "n"}}

    assert student_row(report(dict(COMPUTED)))["hard_coded"] == ""
    assert student_row(report(dict(LOOKED_UP)))["hard_coded"] == "layer_norm_matches_formula"
