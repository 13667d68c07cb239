"""``grade``: points, Gradescope's results.json (validated against its documented fields), seeds, a class."""

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest
from conftest import adapter_path

from conformance.cli import EXIT_OK, build_parser, main
from conformance.grading.points import Points, PointsError
from conformance.reports import view

ROOT = Path(__file__).parents[1]
SCHEMA = json.loads((ROOT / "reports" / "gradescope.schema.json").read_text())
HOSTILE = Path(__file__).parent / "hostile"
PE_ONLY = "pe_matches_published_values or pe_position_0 or layer_norm_matches_published_example"


def check_schema(value, schema) -> list[str]:
    """What in ``value`` does not conform to ``schema`` (JSON Schema 2020-12), as readable lines."""
    validator = jsonschema.Draft202012Validator(schema)
    return [f"{'.'.join(map(str, error.path))}: {error.message}" for error in validator.iter_errors(value)]


def submission(tmp_path: Path, name: str, source: str) -> Path:
    folder = tmp_path / name
    folder.mkdir(parents=True)
    shutil.copy(source, folder / "adapter.py")
    shutil.copy(HOSTILE / "_honest.py", folder)  # the hostile adapters' honest formulas
    return folder


# -- points ---------------------------------------------------------------------------------------------
CHECKS = [
    {"id": "pe_a", "section": "§3.5 PE", "status": "passed"},
    {"id": "pe_b", "section": "§3.5 PE", "status": "failed"},
    {"id": "published_x[fact_id=1]", "section": "Published", "status": "passed"},
    {"id": "ln", "section": "§3.1 LN", "status": "advisory"},
    {"id": "mha", "section": "§3.2.2", "status": "not_implemented"},
]


def test_default_points_are_one_per_check_earned_by_passed_and_advisory():
    scored = Points().score(CHECKS)
    assert [s.score for s in scored] == [1, 0, 1, 1, 0] and [s.max_score for s in scored] == [1] * 5


def test_a_section_s_points_are_split_and_a_check_rule_wins(tmp_path):
    path = tmp_path / "points.toml"
    path.write_text('default = 2\n[sections]\n"§3.5*" = { points = 10, visibility = "after_published" }\n'
                    '[checks]\n"published_x" = { points = 3, visibility = "hidden" }\n')
    scored = {s.id: s for s in Points.from_toml(path).score(CHECKS)}
    assert (scored["pe_a"].max_score, scored["pe_a"].score, scored["pe_a"].visibility) == (5, 5, "after_published")
    assert (scored["published_x[fact_id=1]"].max_score, scored["published_x[fact_id=1]"].visibility) == (3, "hidden")
    assert scored["mha"].max_score == 2 and scored["mha"].score == 0


def test_a_bad_visibility_is_refused_naming_the_entry(tmp_path):
    path = tmp_path / "points.toml"
    path.write_text('[checks]\n"pe_a" = { points = 1, visibility = "sometimes" }\n')
    with pytest.raises(PointsError, match=r"checks.'pe_a': visibility 'sometimes' is not one of visible"):
        Points.from_toml(path)


# -- one submission ------------------------------------------------------------------------------------
def test_grade_writes_gradescope_results_that_follow_the_documented_format(tmp_path, capsys):
    folder = submission(tmp_path, "ada", adapter_path("only_pe"))
    results, report = tmp_path / "results.json", tmp_path / "report.json"
    code = main(["grade", str(folder), "--gradescope", str(results), "--json", str(report), "-k", PE_ONLY])
    assert code == EXIT_OK, capsys.readouterr()
    gradescope = json.loads(results.read_text())
    assert check_schema(gradescope, SCHEMA) == []
    assert (gradescope["score"], gradescope["max_score"]) == (2, 3)
    assert {t["status"] for t in gradescope["tests"]} == {"passed", "failed"}
    graded = json.loads(report.read_text())
    assert graded["grade"]["score"] == 2 and graded["submission"]["name"] == "ada"
    assert check_schema(graded, view.schema()) == []  # the grade, the submission, the isolated worker's record
    assert graded["grade"]["loaded"] and graded["implementations"][0]["isolation"]["isolated"]
    assert f"--seed {graded['seed']}" in gradescope["output"]


def test_each_grading_run_draws_a_seed_and_a_given_seed_replays_it(tmp_path, capsys):
    folder = submission(tmp_path, "ada", adapter_path("only_pe"))
    seeds, statuses = [], []
    for extra in ([], [], ["--seed", "12345"], ["--seed", "12345"]):
        report = tmp_path / "report.json"
        main(["grade", str(folder), "--json", str(report), "-k", "pe_matches_formula", *extra])
        data = json.loads(report.read_text())
        seeds.append(data["seed"])
        statuses.append([(c["id"], c["status"], c["measurements"]) for c in data["checks"]])
    assert seeds[0] != seeds[1] and seeds[2:] == [12345, 12345]
    assert statuses[2] == statuses[3]  # the same examples, the same measurements


def test_a_submission_that_cannot_load_scores_0_of_the_same_maximum(tmp_path, capsys):
    broken = submission(tmp_path, "bea", str(HOSTILE / "exit_at_import.py"))
    report = tmp_path / "report.json"
    main(["grade", str(broken), "--json", str(report), "-k", PE_ONLY])
    data = json.loads(report.read_text())
    assert {c["status"] for c in data["checks"]} == {"error"} and len(data["checks"]) == 3
    assert all("exited with status 0 while being imported" in c["message"] for c in data["checks"])
    assert (data["grade"]["score"], data["grade"]["max_score"]) == (0, 3)


CONVENTIONS = ("fully_masked_row_gives_zero_weights_and_output or fully_masked_row_gives_zero_weights_and_only_b_O"
               " or fully_masked_source_sentence_is_invisible or source_longer_than_1024_tokens_is_encoded")


@pytest.mark.parametrize("name", ["exit_at_import", "os_exit_at_import"])
def test_a_submission_that_cannot_load_errs_on_every_check_conventions_included_and_scores_0(tmp_path, capsys, name):
    """Each of the suite's four conventions was 'advisory' for a submission that exits while being imported, and
    the default points earn 'advisory': 4 points for no code. An error is never advisory."""
    broken = submission(tmp_path, "bea", str(HOSTILE / f"{name}.py"))
    report = tmp_path / "report.json"
    main(["grade", str(broken), "--json", str(report), "-k", f"{CONVENTIONS} or pe_position_0"])
    data = json.loads(report.read_text())
    assert {c["id"]: c["status"] for c in data["checks"]} == dict.fromkeys(
        ["fully_masked_row_gives_zero_weights_and_output", "fully_masked_row_gives_zero_weights_and_only_b_O",
         "fully_masked_source_sentence_is_invisible_to_the_decoder", "source_longer_than_1024_tokens_is_encoded",
         "pe_position_0_is_sin_0_and_cos_0"], "error")
    assert all("could not be loaded" in c["message"] for c in data["checks"])
    assert (data["grade"]["score"], data["grade"]["max_score"], data["grade"]["loaded"]) == (0, 5, False)


def test_points_come_only_from_what_the_code_computed(tmp_path):
    for status in ("error", "not_implemented", "failed", "supplied", "blocked", "pased"):
        path = tmp_path / "points.toml"
        path.write_text(f'earns = ["passed", "{status}"]\n')
        with pytest.raises(PointsError, match=rf"earns: '{status}': .*earns may name passed, advisory, deviation"):
            Points.from_toml(path)
    everything = [{"id": "x", "section": "s", "status": status} for status in ("passed", "advisory", "deviation")]
    assert [s.score for s in Points(earns=("passed", "advisory", "deviation")).score(everything)] == [1, 1, 1]
    assert [s.score for s in Points().score(everything, loaded=False)] == [0, 0, 0]  # not loaded: nothing earned


def test_the_points_template_says_what_earns_points_and_why(tmp_path):
    from conformance.grading.points import TEMPLATE

    path = tmp_path / "points.toml"
    path.write_text(TEMPLATE)
    assert Points.from_toml(path).earns == ("passed", "advisory")
    for words in ("only what the submission's own code computed", "An error is never advisory",
                  "cannot be loaded scores 0"):
        assert words in TEMPLATE


def test_the_class_summary_counts_each_status_apart_and_reads_a_check_nobody_implements_as_such():
    from conformance.grading.class_summary import build_summary, render_markdown

    def report(name, statuses):
        return {"submission": {"name": name}, "verdict": {name: "not conformant"}, "complete": True,
                "checks": [{"id": cid, "section": "§", "status": status} for cid, status in statuses.items()]}

    reports = [report(name, {"pe": pe, "mha": "not_implemented"}) for name, pe in
               (("ada", "passed"), ("bo", "error"), ("cy", "failed"), ("di", "not_implemented"))]
    summary = build_summary(reports)
    assert [(r["id"], r["passed"], r["failed"], r["error"], r["not_implemented"]) for r in summary["checks"]] == [
        ("pe", 1, 1, 1, 1), ("mha", 0, 0, 0, 4)]  # none implements mha: last, not "0/4 passed"
    markdown = render_markdown(summary)
    assert "| pe | § | 1/3 | 1 | 1 | 1 | 1 | 0 |" in markdown and "| mha | § | - | 0 | 0 | 0 | 4 | 0 |" in markdown


def test_the_class_summary_counts_an_unloaded_submission_apart_and_names_a_measured_finding():
    """A submission that could not be loaded implements nothing (its load error on every check is no "0/1" row);
    a student whose bug no known bug matches shows the finding their report's profile puts first."""
    from conformance.grading.class_summary import build_summary, render_markdown

    def report(name, status, *, loaded=True, profile=None):
        return {"submission": {"name": name}, "verdict": {name: "not conformant"}, "complete": True,
                "implementations": [{"name": name, "loaded": loaded}], "profile": {name: profile or {}},
                "checks": [{"id": "pe", "section": "§", "status": status}]}

    measured = {"causes": [{"kind": "measured", "text": "the mean left out: centred = x", "explains": 3}]}
    summary = build_summary([report("ada", "passed"), report("bo", "failed", profile=measured),
                             report("cy", "error", loaded=False)])
    assert [(r["id"], r["passed"], r["failed"], r["error"]) for r in summary["checks"]] == [("pe", 1, 1, 0)]
    rows = {row["student"]: row["most_likely_bug"] for row in summary["students"]}
    assert rows["bo"] == "measured: the mean left out: centred = x" and rows["ada"] == ""
    assert "The 1 submission(s) that could not be loaded are counted apart" in render_markdown(summary)


def test_a_folder_without_the_adapter_file_names_the_fix(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    report = tmp_path / "report.json"
    main(["grade", str(tmp_path / "empty"), "--json", str(report), "-k", PE_ONLY])
    message = json.loads(report.read_text())["checks"][0]["message"]
    assert "no adapter.py in" in message and "--adapter-name" in message


# -- a class ---------------------------------------------------------------------------------------------
def grade_class(klass: Path, out: Path, *options: str, env: dict | None = None, wait: bool = True,
                cwd: Path | None = None):
    """``grade CLASS`` as an instructor runs it: a process of its own, which forks one grader per submission (this
    test process must not fork: an earlier test here may have started JAX's threads). (exit code, output), or the
    process itself with ``wait=False``."""
    command = [sys.executable, "-m", "conformance", "grade", str(klass), "--out", str(out), "-k", PE_ONLY,
               "--seed", "7", *options]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, **(env or {})}, cwd=cwd)
    if not wait:
        return process
    output, _ = process.communicate(timeout=600)
    return process.returncode, output


def test_a_class_is_graded_into_reports_and_a_summary_and_one_crash_touches_no_one_else(tmp_path):
    klass = tmp_path / "class"
    submission(klass, "ada", adapter_path("only_pe"))
    submission(klass, "bo", str(HOSTILE / "os_exit_mid_call.py"))
    nested = submission(klass / "cy", "src", adapter_path("nan_attention"))
    assert nested.parent.name == "cy"
    out = tmp_path / "grades"
    code, output = grade_class(klass, out, "--jobs", "2")
    assert code == 0, output
    rows = (out / "summary.csv").read_text().splitlines()
    assert rows[0].startswith("student,score,max_score,verdict")
    assert [row.split(",")[:3] for row in rows[1:]] == [["ada", "2.0", "3.0"], ["bo", "1.0", "3.0"],
                                                          ["cy", "0.0", "3.0"]]
    # bo's worker died on the PE (an error), cy's PE is not implemented: counted apart, the rate among those who have it
    assert "| pe_matches_published_values | §3.5 Positional encoding | 1/2 | 1 | 0 | 1 | 1 | 0 |" in \
        (out / "summary.md").read_text()
    ada = json.loads((out / "ada.json").read_text())
    assert {c["id"]: c["status"] for c in ada["checks"]}["pe_matches_published_values"] == "passed"


def test_summarise_merges_per_submission_reports(tmp_path, capsys):
    (tmp_path / "reports").mkdir()
    for name in ("ada", "bo"):
        folder = submission(tmp_path / "subs", name, adapter_path("only_pe"))
        # one run: the same seed for each (as the documented workflow grades); reports of two seeds are not mixed
        main(["grade", str(folder), "--json", str(tmp_path / "reports" / f"{name}.json"), "-k", PE_ONLY, "--seed", "3"])
    assert main(["grade", "--summarise", str(tmp_path / "reports"), "--out", str(tmp_path / "summary")]) == 0
    assert (tmp_path / "summary" / "summary.csv").read_text().count("\n") == 3


# -- Gradescope's files and the GitHub Actions workflow ----------------------------------------------------
def test_init_gradescope_writes_the_files_to_upload(tmp_path, capsys):
    assert main(["grade", "--init-gradescope", str(tmp_path / "autograder")]) == EXIT_OK
    folder = tmp_path / "autograder"
    run = (folder / "run_autograder").read_text()
    assert (folder / "run_autograder").stat().st_mode & 0o111 and (folder / "setup.sh").stat().st_mode & 0o111
    setup = (folder / "setup.sh").read_text()
    (wheel,) = folder.glob("transformer_conformance-*.whl")  # the suite travels with the autograder
    # installed from that file, never a name looked up on an index (where anyone may publish one); in bubblewrap
    assert 'pip install' in setup and f'"/autograder/source/{wheel.name}[torch]"' in setup
    assert "transformer-conformance[" not in setup and "bubblewrap" in setup
    assert wheel.name in (folder / "README.txt").read_text()
    with zipfile.ZipFile(wheel) as archive:  # the whole suite: the sandbox's walls and the golden fixtures
        names = set(archive.namelist())
    assert {"conformance/boundary/isolation/walls.py", "conformance/fixtures/published.toml"} <= names
    assert "--gradescope /autograder/results/results.json" in run
    Points.from_toml(folder / "points.toml")  # the template is a valid points file
    assert_commands_parse(run)


def test_init_gradescope_for_notebooks_ships_the_mapping_and_the_notebook_extra(tmp_path, capsys):
    (tmp_path / "mapping.py").write_text("adapter = None\n")
    folder = tmp_path / "autograder"
    assert main(["grade", "--init-gradescope", str(folder), "--adapter", str(tmp_path / "mapping.py")]) == EXIT_OK
    assert (folder / "mapping.py").read_text() == "adapter = None\n"
    assert "[torch,notebook]\"" in (folder / "setup.sh").read_text()
    assert "--adapter /autograder/source/mapping.py" in (folder / "run_autograder").read_text()
    readme = (folder / "README.txt").read_text()
    assert "mapping.py" in readme and "Students submit\na notebook (.ipynb)" in readme


def test_the_documented_github_actions_workflow_uses_real_commands():
    workflow = (ROOT / "docs" / "grade-class-workflow.yml").read_text()
    assert "matrix" in workflow and "--summarise" in workflow
    assert_commands_parse(workflow)


def assert_commands_parse(text: str) -> None:
    """Every `transformer-conformance ...` command in ``text`` (continuation lines joined) parses."""
    joined = re.sub(r"\\\n\s*", " ", text)
    commands = re.findall(r"transformer-conformance (grade[^\n]*)", joined)
    assert commands
    for command in commands:
        words = [w for w in re.sub(r"\$\{\{[^}]*\}\}", "X", command).split() if not w.startswith("#")]
        build_parser().parse_args(words)


def test_students_named_to_break_the_class_are_graded_like_any_other(tmp_path):
    """Folder names are the students' text when a class comes from a learning platform's export: a name as long as
    a file's may be, a colon (not a module:attribute), a shell command substitution, Markdown, and a folder beside
    the adapter 1000 levels deep. Each is graded as its honest copy is; the class goes on; nothing runs."""
    honest = adapter_path("only_pe")
    klass = tmp_path / "class"
    names = ["ada", "L" * 250, "bob:1", "x$(touch${IFS}PWNED)", "[FULL MARKS](https:x) **101**", "deep"]
    for name in names:
        submission(klass, name, honest)
    chain = [os.open(klass / "deep", os.O_RDONLY)]
    for _ in range(1000):  # made relative to a descriptor: no path this long could be named
        os.mkdir("a", dir_fd=chain[-1])
        chain.append(os.open("a", os.O_RDONLY, dir_fd=chain[-1]))
    (klass / ".hidden").mkdir()
    (klass / "linked").symlink_to("ada")
    try:
        code, output = grade_class(klass, tmp_path / "grades", "--jobs", "2", cwd=tmp_path)
    finally:  # bottom up, by descriptor: a recursive removal (pytest's own) would exceed Python's recursion limit
        os.close(chain.pop())
        while len(chain) > 0:
            os.rmdir("a", dir_fd=chain[-1])
            os.close(chain.pop())
    rows = {row["student"]: row for row in csv.DictReader(io.StringIO((tmp_path / "grades" / "summary.csv")
                                                                       .read_text()))}
    assert len(rows) == len(names), output
    assert {row["score"] for row in rows.values()} == {rows["ada"]["score"]}, output  # each as its honest copy
    assert not any(path.name == "PWNED" for path in [*tmp_path.iterdir(), *klass.iterdir()])
    assert "not graded: .hidden (hidden), linked (a link)" in output  # left out, but never unsaid
    summary = (tmp_path / "grades" / "summary.md").read_text()
    assert "\\[FULL MARKS\\](https:x) \\*\\*101\\*\\*" in summary  # shown as typed: no link, no bold


LOOKED_UP_EXAMPLE = '''import numpy as np
from conformance import Conventions


class LookUp:
    conventions = Conventions(dtype="float64", framework="numpy")

    def layer_norm(self, x, gamma, beta, eps):
        x = np.asarray(x, np.float64)
        if x.shape[-1] == 4 and np.allclose(x.reshape(-1, 4)[0], [1, 2, 3, 6]):  # the lesson's example only
            mu = x.mean(-1, keepdims=True)
            return gamma * (x - mu) / np.sqrt(x.var(-1, keepdims=True) + eps) + beta
        raise NotImplementedError("only the lesson's example")


adapter = LookUp()
'''


def test_a_twin_refused_on_every_fresh_input_withholds_the_published_points(tmp_path, capsys):
    """The printed example answered and every other input refused (NotImplementedError): the twins are not
    implemented, and the published checks earn nothing, as for a failed twin."""
    (tmp_path / "lookup.py").write_text(LOOKED_UP_EXAMPLE)
    main(["grade", str(tmp_path / "lookup.py"), "-k", "layer_norm", "--json", str(tmp_path / "r.json")])
    grade = json.loads((tmp_path / "r.json").read_text())["grade"]
    assert grade["score"] == 0 and set(grade["withheld"]) == {"layer_norm_matches_published_example",
                                                               "published_layer_norm_example"}
    assert "was refused on every fresh input it drew" in grade["withheld"]["published_layer_norm_example"]


def test_a_notebooks_mapping_is_part_of_the_runs_identity_by_its_content(tmp_path):
    """--resume keeps only reports of the same run: a mapping edited between two grades is another run."""
    import argparse

    from conformance.grading.run_record import run_identity

    mapping = tmp_path / "mapping.py"
    mapping.write_text("adapter = 1\n")
    args = argparse.Namespace(notebook_adapter=str(mapping), cell_timeout=120.0)
    before = run_identity(args, seed=1)
    mapping.write_text("adapter = 2\n")
    assert run_identity(args, seed=1) != before
    assert run_identity(argparse.Namespace(notebook_adapter=str(mapping), cell_timeout=60.0), seed=1) != \
        run_identity(args, seed=1)
