"""Notebooks, where learners and instructors work: a learner's notebook certifies itself through the Python API in a
real Jupyter kernel (nbclient), and shows the report in place; the same notebook certified from the command line
(its cells run in a kernel in the sandboxed worker); a class of notebooks graded with one instructor's adapter file;
hostile cells (a shell escape, %%bash, a classmate's notebook read, an endless loop) contained. Needs the notebook
extra (ipykernel, nbclient, nbformat), which requirements-dev.txt installs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook  # noqa: E402

# The lesson's style: the student's own function in a cell; ddof=1 is the deliberate bug (torch.var's default).
LAYER_NORM = """import numpy as np

def layer_norm(x, gamma, beta, eps):
    mu = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True, ddof={ddof})
    return gamma * (x - mu) / np.sqrt(var + eps) + beta
"""
ADAPTER_CELL = """from conformance import Conventions

class Mine:
    conventions = Conventions(dtype="float64", framework="numpy")

    def layer_norm(self, x, gamma, beta, eps):
        return layer_norm(x, gamma, beta, eps)

adapter = Mine()
"""
# The instructor's mapping: the lesson's function, by its name in the notebook's namespace.
INSTRUCTOR_ADAPTER = ADAPTER_CELL
CHECKS = "layer_norm"


def notebook(path: Path, *cells: str | tuple[str, list[str]]) -> Path:
    """A notebook of these code cells (a (source, tags) pair for a tagged one), after a Markdown title."""
    book = new_notebook()
    book.cells = [new_markdown_cell("# The original transformer, in a notebook")]
    for cell in cells:
        source, tags = cell if isinstance(cell, tuple) else (cell, [])
        book.cells.append(new_code_cell(source, metadata={"tags": tags} if tags else {}))
    nbformat.write(book, str(path))
    return path


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "conformance", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def certified(path: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict | None]:
    report = path.parent / "report.json"
    report.unlink(missing_ok=True)
    run = cli("certify", path.name, "-k", CHECKS, "--progress", "off", "--json", str(report), *args, cwd=path.parent)
    return run, json.loads(report.read_text()) if report.exists() else None


def notes(report: dict) -> list[str]:
    return report["implementations"][0]["load_warnings"]


def statuses(report: dict) -> set[str]:
    return {check["status"] for check in report["checks"]}


# -- from inside the notebook: the Python API in a real kernel --------------------------------------------------------


def test_a_learners_notebook_certifies_itself_and_shows_the_report_in_the_cell(tmp_path):
    from nbclient import NotebookClient

    path = notebook(tmp_path / "lesson.ipynb", LAYER_NORM.format(ddof=1), ADAPTER_CELL,
                    f"from conformance import certify\nreport = certify(adapter, select={CHECKS!r})\nreport",
                    "print(report.verdict, len(report.failures), report.failures[0].likely_cause)")
    book = nbformat.read(str(path), as_version=4)
    NotebookClient(book, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    shown = book.cells[3].outputs
    result = next(out for out in shown if out.output_type == "execute_result")
    assert result.data["text/html"].startswith("<iframe srcdoc=") and "not conformant" in result.data["text/markdown"]
    progress = "".join(out.text for out in shown if out.output_type == "stream" and out.name == "stderr")
    assert "\r" in progress and "checks done" in progress and "\x1b" not in progress  # one line, rewritten in place
    printed = book.cells[4].outputs[0].text
    assert printed.startswith("not conformant 4 LayerNorm divides the variance by d - 1")


# -- from the command line: the notebook's cells in a kernel in the sandboxed worker ----------------------------------


def test_a_notebook_certifies_from_the_command_line_with_what_each_cell_did(tmp_path):
    path = notebook(tmp_path / "lesson.ipynb", LAYER_NORM.format(ddof=0), ("import time\ntime.sleep(600)",
                    ["conformance-skip"]), "1 / 0", "while True:\n    pass", ADAPTER_CELL)
    run, report = certified(path, "--cell-timeout", "2")
    assert run.returncode == 0 and statuses(report) <= {"passed", "not_implemented"}, run.stdout + run.stderr
    assert report["implementations"][0]["isolation"]["isolated"] is True
    assert notes(report)[:4] == ["notebook: 5 code cells: 2 ran, 1 skipped, 2 failed",
                                 "notebook cell 2: skipped (tagged conformance-skip)",
                                 "notebook cell 3: failed: ZeroDivisionError: division by zero",
                                 "notebook cell 4: failed: stopped after 2 s (the cell time limit)"]


def test_an_instructors_adapter_file_maps_a_notebook_that_defines_no_adapter(tmp_path):
    path = notebook(tmp_path / "student.ipynb", LAYER_NORM.format(ddof=1))
    run, report = certified(path)
    assert run.returncode == 2 and "the notebook defines no 'adapter'. Fix: a cell `adapter = MyAdapter()`, or an" \
        " adapter file run after its cells (certify NOTEBOOK.ipynb --adapter FILE.py)" in run.stderr
    assert "--pass-env" not in run.stderr  # the suite's own words: nothing of the environment to blame
    (tmp_path / "mapping.py").write_text(INSTRUCTOR_ADAPTER)
    run, report = certified(path, "--adapter", "mapping.py")
    assert run.returncode == 1 and report["implementations"][0]["name"] == "student.ipynb+mapping.py"
    assert report["checks"][0]["likely_cause"].endswith("(mutant:layer_norm_unbiased_variance)")


def test_shell_escapes_and_bash_cells_run_inside_the_sandbox(tmp_path):
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("TOPSECRET\n")
    (tmp_path / "class").mkdir()
    path = notebook(tmp_path / "class" / "lesson.ipynb", LAYER_NORM.format(ddof=0),
                    "echoed = !echo inside\nassert echoed == ['inside'], echoed",
                    f"seen = !cat {secret}\nassert not any('TOPSECRET' in line for line in seen), 'leaked'",
                    f"%%bash\ncat {secret} > \"$TMPDIR/copy.txt\" && echo copied",
                    f"assert 'TOPSECRET' not in open({str(secret)!r}).read(), 'leaked'", ADAPTER_CELL)
    run, report = certified(path)
    assert run.returncode == 0, run.stdout + run.stderr
    said = notes(report)
    assert said[0] == "notebook: 6 code cells: 4 ran, 0 skipped, 2 failed" and "leaked" not in " ".join(said)
    assert said[1].startswith("notebook cell 4: failed: CalledProcessError")  # %%bash's cat was refused the file
    assert said[2].startswith("notebook cell 5: failed: FileNotFoundError")  # and so is Python's own read


def test_a_notebook_without_ipykernel_names_the_extra(tmp_path, monkeypatch):
    from conformance.boundary.isolation import notebooks

    monkeypatch.setitem(sys.modules, "ipykernel.inprocess.manager", None)  # as if the extra were not installed
    with pytest.raises(notebooks.NotebookFailed, match=r"pip install 'transformer-conformance\[notebook\]'"):
        notebooks.kernel_shell()


# -- a class of notebooks --------------------------------------------------------------------------------------------


def test_a_class_of_notebooks_is_graded_with_one_instructors_adapter_file(tmp_path):
    room = tmp_path / "class"
    room.mkdir()
    notebook(room / "alice.ipynb", LAYER_NORM.format(ddof=0))
    notebook(room / "bob.ipynb", LAYER_NORM.format(ddof=1))
    notebook(room / "carol.ipynb", "import sys\nsys.exit(3)", "layer_norm = undefined_name")
    notebook(room / "dave.ipynb", LAYER_NORM.format(ddof=0),
             f"print(open({str(room / 'bob.ipynb')!r}).read()[:40])",  # a classmate's notebook
             "import os\nprint(sorted(os.listdir('.')))", "while True:\n    pass")
    (tmp_path / "mapping.py").write_text(INSTRUCTOR_ADAPTER)
    run = cli("grade", "class", "--adapter", "mapping.py", "-k", CHECKS, "--cell-timeout", "2", "--jobs", "2",
              cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    out = tmp_path / "class-grades"
    scores = {name: json.loads((out / f"{name}.ipynb.json").read_text())["grade"] for name in
              ("alice", "bob", "carol", "dave")}
    # faithful: every check it implements (the layers' epsilon needs a model: not implemented, no point)
    assert scores["alice"]["score"] == scores["dave"]["score"] == scores["alice"]["max_score"] - 1 > 0
    assert scores["bob"]["score"] == 0 and scores["carol"]["score"] == 0
    dave = (out / "dave.ipynb.txt").read_text()
    assert "notebook cell 2: failed: FileNotFoundError" in dave  # bob's notebook is not there to read
    assert "notebook cell 4: failed: stopped after 2 s" in dave
    carol = json.loads((out / "carol.ipynb.json").read_text())
    assert carol["checks"][0]["status"] == "error" and "NameError: name 'layer_norm' is not defined" in \
        carol["checks"][0]["message"]
    assert "| bob.ipynb | 0 / 5 | not conformant |" in (out / "summary.md").read_text()


# -- what a red team found (tests/heldout_notebook_attacks/), each fixed --------------------------------------------


def test_the_notebooks_hooks_and_input_transformers_cannot_rewrite_the_instructors_file(tmp_path):
    """The mapping runs as Python in the notebook's namespace, not through the kernel's shell: an input transformer
    that would rewrite its float64 as bfloat16, or a hook run after each cell, never sees it."""
    path = notebook(tmp_path / "mallory.ipynb", LAYER_NORM.format(ddof=1),
                    "ip = get_ipython()\n"
                    "ip.input_transformers_cleanup.append(\n"
                    "    lambda lines: [line.replace('float64', 'bfloat16') for line in lines])\n"
                    "ip.events.register('post_run_cell', lambda result: globals().update(adapter=None))")
    (tmp_path / "mapping.py").write_text(INSTRUCTOR_ADAPTER)
    run, report = certified(path, "--adapter", "mapping.py")
    assert report["implementations"][0]["conventions"]["dtype"] == "float64", run.stdout + run.stderr
    assert run.returncode == 1 and "failed" in statuses(report)


def test_a_graded_submission_that_declares_half_precision_is_not_graded_in_it_unless_asked(tmp_path):
    """The notebook patches the adapter protocol so that the instructor's mapping declares bfloat16 (tolerances
    looser by far): without grade --dtype, every check refuses that dtype and nothing earns a point."""
    room = tmp_path / "class"
    room.mkdir()
    notebook(room / "mallory.ipynb", LAYER_NORM.replace("return gamma", "return 1.004 * gamma").format(ddof=0),
             "import conformance\nclass Half(conformance.Conventions):\n"
             "    def __init__(self, **given):\n        super().__init__(**{**given, 'dtype': 'bfloat16'})\n"
             "conformance.Conventions = Half")
    (tmp_path / "mapping.py").write_text(INSTRUCTOR_ADAPTER)
    run = cli("grade", str(room / "mallory.ipynb"), "--adapter", "mapping.py", "-k", CHECKS, "--json", "r.json",
              cwd=tmp_path)
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["grade"]["score"] == 0, run.stdout
    assert all(check["status"] == "not_implemented" for check in report["checks"])
    assert "declares bfloat16, whose tolerances are looser" in report["checks"][0]["message"]


def test_a_cell_that_catches_its_stop_ends_the_worker_instead_of_holding_it(tmp_path):
    path = notebook(tmp_path / "retry.ipynb", LAYER_NORM.format(ddof=0),
                    "import time\nfor attempt in range(1000):\n    try:\n        time.sleep(1)\n    except:\n"
                    "        print('retrying')", ADAPTER_CELL)
    run, report = certified(path, "--cell-timeout", "1")
    assert run.returncode == 2 and "notebook cell 2 could not be stopped: it went on 10 s past its 1 s" in run.stderr


def test_honest_notebooks_the_first_grader_failed_now_load(tmp_path):
    """Cells run in the notebook's folder (%run helpers.py, a data file by its name); a byte-order mark; nbformat 3."""
    (tmp_path / "helpers.py").write_text("FROM_HELPERS = 1\n")
    (tmp_path / "eps.txt").write_text("1e-5\n")
    path = notebook(tmp_path / "lesson.ipynb", LAYER_NORM.format(ddof=0),
                    "%run helpers.py\nassert FROM_HELPERS == 1 and open('eps.txt').read().strip() == '1e-5'",
                    ADAPTER_CELL)
    run, report = certified(path)
    assert notes(report)[0] == "notebook: 3 code cells: 3 ran, 0 skipped, 0 failed", run.stdout + run.stderr
    bom = tmp_path / "bom.ipynb"
    bom.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert certified(bom)[0].returncode == 0
    version_3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": [
        {"cell_type": "code", "input": LAYER_NORM.format(ddof=0), "outputs": []},
        {"cell_type": "code", "input": ADAPTER_CELL.splitlines(keepends=True), "outputs": []}]}]}
    (tmp_path / "v3.ipynb").write_text(json.dumps(version_3))
    assert certified(tmp_path / "v3.ipynb")[0].returncode == 0


def test_a_class_says_what_it_does_not_grade_and_names_carry_no_line_of_their_own(tmp_path):
    room = tmp_path / "class"
    (room / "two").mkdir(parents=True)
    notebook(room / "two" / "lesson.ipynb", LAYER_NORM.format(ddof=0))
    notebook(room / "two" / "Untitled.ipynb", "")
    notebook(room / "forger\nscore: 5 of 5.ipynb", LAYER_NORM.format(ddof=1))
    (room / "linked.ipynb").symlink_to(room / "two" / "lesson.ipynb")
    with open(room / "huge.ipynb", "wb") as huge:  # sparse: 101 MiB that take no disk
        huge.truncate(101 * 2**20)
    (tmp_path / "mapping.py").write_text(INSTRUCTOR_ADAPTER)
    run = cli("grade", "class", "--adapter", "mapping.py", "-k", CHECKS, "--jobs", "2", cwd=tmp_path)
    assert "not graded: linked.ipynb (a link)" in run.stdout, run.stdout
    assert not any(line.startswith("score:") for line in run.stdout.splitlines())
    out = tmp_path / "class-grades"
    assert not any("\n" in path.name for path in out.iterdir())
    forger = next(out.glob("forger*.txt")).read_text()
    assert [line for line in forger.splitlines() if line.startswith("score:")] == \
        [line for line in forger.splitlines() if line.startswith("score:")][-1:]  # only the grade's own
    two = json.loads((out / "two.json").read_text())
    assert "holds 2 notebooks at the same level (Untitled.ipynb, lesson.ipynb)" in two["checks"][0]["message"]
    huge_report = json.loads((out / "huge.ipynb.json").read_text())
    assert "huge.ipynb is 101 MiB, more than a notebook of 100 MiB: not copied" in huge_report["checks"][0]["message"]
