"""No points for a look-up: a published-number check whose randomised twin failed earns nothing, and a look-up found
on evidence is flagged in the grade, in Gradescope's output and in the class summary's hard_coded column."""

import contextlib
import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.grading.points import Points, totals
from conformance.judging.twins import HARD_CODED, TWIN_IDS, TWINS, annotate_hard_coding
from conformance.results import CheckResult

HOSTILE = Path(__file__).parent / "hostile"
LOOKS_UP = "looks_up_published_inputs"
SEED = "0"


def grade(submission: Path, out: Path, name: str) -> dict:
    """grade SUBMISSION (every check but training) -> {"report", "stdout", "results"}. In this process: what is
    tested is the score, the same isolated or not (the sandbox has tests of its own)."""
    report, results = out / "reports" / f"{name}.json", out / f"{name}.results.json"
    report.parent.mkdir(exist_ok=True)
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(io.StringIO()):
        main(["grade", str(submission), "--no-isolate", "--no-training", "--seed", SEED, "--json", str(report),
              "--gradescope", str(results)])
    return {"report": json.loads(report.read_text()), "stdout": stdout.getvalue(),
            "results": json.loads(results.read_text())}


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict:
    """The look-up submission and the same code without the look-up (its ``WrongEverywhere``), graded alike."""
    out = tmp_path_factory.mktemp("grades")
    computes = tmp_path_factory.mktemp("class") / "computes"
    computes.mkdir()
    for name in (f"{LOOKS_UP}.py", "_honest.py"):
        shutil.copy(HOSTILE / name, computes / name)
    (computes / "adapter.py").write_text(f"from {LOOKS_UP} import WrongEverywhere\n\nadapter = WrongEverywhere()\n")
    return {"looks_up": grade(HOSTILE / f"{LOOKS_UP}.py", out, "looks_up"),
            "computes": grade(computes, out, "computes"), "reports": out / "reports"}


def test_a_look_up_scores_no_more_than_the_same_code_that_computes_everything(graded):
    looks_up, computes = (graded[name]["report"]["grade"]["score"] for name in ("looks_up", "computes"))
    passed = sum(c["status"] == "passed" for c in graded["looks_up"]["report"]["checks"])
    # before: 25 against 2 (every published check it looked up earned its point)
    assert looks_up <= computes, (f"expected the look-up to score no more than the same code without it, got"
                                  f" {looks_up} against {computes}: the published checks it passed earned points")
    assert passed > looks_up  # it does pass the published checks: they are withheld, not failed


def test_each_withheld_published_check_says_which_twin_failed(graded):
    grade_ = graded["looks_up"]["report"]["grade"]
    assert "layer_norm_matches_published_example" in grade_["withheld"]
    reason = grade_["withheld"]["layer_norm_matches_published_example"]
    assert "the randomised twin layer_norm_matches_formula failed" in reason
    assert "the published example alone is no evidence of a computed answer" in reason
    test = next(t for t in graded["looks_up"]["results"]["tests"]
                if t["name"].startswith("layer_norm_matches_published_example"))
    assert test["score"] == 0 and "no evidence of a computed answer" in test["output"]
    assert graded["computes"]["report"]["grade"]["withheld"] == {}  # nothing passed there to withhold


def test_the_look_up_is_flagged_in_the_grade_the_terminal_and_gradescope(graded):
    lookups = {found["check"]: found["published"] for found in graded["looks_up"]["report"]["grade"]["lookups"]}
    # the twins' failures are known bugs (an unbiased variance, ...), but bugs that fail the published checks too
    assert "layer_norm_matches_formula" in lookups, f"expected LayerNorm's twin flagged, got {sorted(lookups)}"
    assert "published_layer_norm_example" in lookups["layer_norm_matches_formula"]
    assert "look-up: layer_norm_matches_formula" in graded["looks_up"]["stdout"]
    assert "look-up:" in graded["looks_up"]["results"]["output"]
    assert graded["computes"]["report"]["grade"]["lookups"] == []
    assert "look-up" not in graded["computes"]["stdout"]


def test_the_class_summary_names_the_look_up(graded, tmp_path):
    with contextlib.redirect_stdout(io.StringIO()):
        main(["grade", "--summarise", str(graded["reports"]), "--out", str(tmp_path)])
    rows = {row["student"]: row for row in csv.DictReader((tmp_path / "summary.csv").read_text().splitlines())}
    assert "layer_norm_matches_formula" in rows[LOOKS_UP]["hard_coded"]
    assert rows["computes"]["hard_coded"] == ""


PUBLISHED_AND_TWINS = " or ".join(sorted({*TWINS, *TWIN_IDS, "pe_position_0_is_sin_0_and_cos_0"}))


@pytest.mark.parametrize("impl", ["reference", "numpy"])
def test_a_faithful_implementation_keeps_every_point(certify, impl):
    run = certify(impl, "-k", PUBLISHED_AND_TWINS, "--no-training")
    scored = Points().score_report(run.report)
    assert [s.id for s in scored if s.withheld] == []
    assert totals(scored)[0] == len(run.with_status("passed")) > 20


def check(check_id: str, status: str) -> dict:
    return {"id": check_id, "section": "s", "status": status, "message": ""}


@pytest.mark.parametrize("twin_status", ["not_implemented", "blocked", "supplied", "passed", "advisory"])
def test_a_twin_that_did_not_fail_leaves_its_published_check_s_points(twin_status):
    scored = Points().score([check("published_layer_norm_example", "passed"),
                             check("layer_norm_matches_formula", twin_status)])
    assert (scored[0].score, scored[0].withheld) == (1.0, "")


@pytest.mark.parametrize(("twin_status", "said"), [("failed", "failed"), ("error", "ended in an error")])
def test_a_twin_that_failed_or_erred_takes_its_published_check_s_points(twin_status, said):
    scored = Points().score([check("published_layer_norm_example", "passed"),
                             check("layer_norm_matches_formula", twin_status)])
    assert scored[0].score == 0.0
    assert f"the randomised twin layer_norm_matches_formula {said}" in scored[0].withheld


def test_position_0_loses_its_points_only_to_a_look_up_found_on_evidence():
    """sin 0 and cos 0 whatever the frequencies: a wrong table passes it honestly, a look-up does not earn it."""
    honest = [check("pe_position_0_is_sin_0_and_cos_0", "passed"), check("pe_matches_formula_for_any_size", "failed")]
    looked_up = [*honest[:1], {**honest[1], "likely_cause": HARD_CODED}]
    assert Points().score(honest)[0].score == 1.0
    assert Points().score(looked_up)[0].score == 0.0


def result(check_id: str, status: str, diagnosis=None) -> CheckResult:
    found = CheckResult(id=check_id, impl="x", title="", section="", status=status, message="m")
    found.diagnosis = diagnosis or []
    found.data = {"lookup": {"looked_up": True, "frozen": 0, "jumps": 2, "points": 2}} if status == "failed" else {}
    return found


def test_a_known_bug_that_fails_the_published_example_does_not_explain_its_pass():
    """An unbiased variance fails the LayerNorm example: a pass there beside it, with evidence, is a look-up. Eps
    outside the root passes the example honestly: not called one."""
    def flagged(mutant):
        results = [result("published_layer_norm_example", "passed"),
                   result("layer_norm_matches_formula", "failed", [{"mutant": mutant, "bug": mutant}])]
        annotate_hard_coding(results)
        return results[1].likely_cause == HARD_CODED

    assert flagged("layer_norm_unbiased_variance")
    assert not flagged("layer_norm_eps_outside_root")
    assert not flagged("a_bug_the_catalogue_does_not_list")
