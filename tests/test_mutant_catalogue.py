"""The mutant catalogue holds the suite to the Hypothesis rule "any bug ... is a bug in our test suite too".

* the reference passes every check, and every one of those checks is failed by at least one mutant;
* every mutant of ``implementations/mutants/``, certified over the whole suite (``--no-training``; with
  training for a module that sets ``TRAINING = True``, marked slow), fails exactly the checks its
  ``CAUGHT_BY`` names, errors on exactly those in ``ERRORED``, is advised on exactly those in ``ADVISORY``
  (the suite's conventions, docs/claims.md), and its failure messages contain what
  ``MESSAGES`` pins (the likely cause, the diagnosis, the first divergence).

The declarations are read from the mutant files without importing them (``ast``), so collection needs
no torch. ``transformer-conformance mutants`` prints the same facts as a kill matrix.
"""

import ast
from pathlib import Path

import pytest

import conformance.implementations.mutants as mutants_package

MUTANTS_DIR = Path(mutants_package.__file__).parent
DECLARED = ("CAUGHT_BY", "ERRORED", "ADVISORY", "MESSAGES", "TRAINING")


def declared(path: Path) -> dict:
    """The literal CAUGHT_BY, ERRORED, MESSAGES and TRAINING a mutant file assigns."""
    found = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in DECLARED:
                found[node.targets[0].id] = ast.literal_eval(node.value)
    return found


MUTANTS = {name: declared(MUTANTS_DIR / f"{name}.py") for name in mutants_package.names()}
FORWARD = sorted(name for name, d in MUTANTS.items() if not d.get("TRAINING"))
TRAINING = sorted(name for name, d in MUTANTS.items() if d.get("TRAINING"))


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Hundreds of tiny tensors per run: a second intra-op thread only makes each op wait on a busy machine."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def describe_difference(got: set, expected: set) -> str:
    return f"unexpected: {sorted(got - expected)}; missing: {sorted(expected - got)}"


def assert_exactly_as_declared(run, expected: dict):
    assert run.report is not None, run.err
    failed, errored, advised = run.with_status("failed"), run.with_status("error"), run.with_status("advisory")
    assert failed == set(expected["CAUGHT_BY"]), describe_difference(failed, set(expected["CAUGHT_BY"]))
    assert errored == set(expected["ERRORED"]), describe_difference(errored, set(expected["ERRORED"]))
    advisory = set(expected.get("ADVISORY", ()))
    assert advised == advisory, describe_difference(advised, advisory)
    messages = {check["id"]: check["message"] for check in run.report["checks"]}
    for check_id, text in expected.get("MESSAGES", {}).items():
        assert text in messages[check_id], f"{check_id}: {text!r} not in\n{messages[check_id]}"
    assert run.code == 1


def test_every_mutant_declares_its_bug_and_its_catches():
    assert len(MUTANTS) >= 30
    for name, found in MUTANTS.items():
        assert {"CAUGHT_BY", "ERRORED"} <= set(found), f"{name} lacks CAUGHT_BY or ERRORED"
        assert found["CAUGHT_BY"] or found["ERRORED"], f"{name} is caught by no check"
        doc = ast.get_docstring(ast.parse((MUTANTS_DIR / f"{name}.py").read_text())) or ""
        assert "§" in doc, f"{name}: the docstring names no paper section"


def test_reference_passes_every_check_and_each_check_fails_on_some_mutant(certify):
    run = certify("reference", "--no-training")
    assert run.report is not None, run.err
    statuses = run.statuses()
    assert {cid: s for cid, s in statuses.items() if s != "passed"} == {}, run.out
    caught = set().union(*(set(d["CAUGHT_BY"]) | set(d["ERRORED"]) | set(d.get("ADVISORY", ()))
                           for d in MUTANTS.values()))
    assert set(statuses) <= caught, f"checks no mutant fails: {sorted(set(statuses) - caught)}"


@pytest.mark.parametrize("name", FORWARD)
def test_mutant_fails_exactly_the_checks_it_declares(certify, name):
    assert_exactly_as_declared(certify(f"mutant:{name}", "--no-training"), MUTANTS[name])


# Training mutants train the toy model (up to 1,500 steps): run them with `python -m pytest -m slow`;
# tests/test_training.py runs their cheap training checks (a few updates each) in every run.
@pytest.mark.slow
@pytest.mark.parametrize("name", TRAINING)
def test_training_mutant_fails_exactly_the_checks_it_declares(certify, name):
    assert_exactly_as_declared(certify(f"mutant:{name}"), MUTANTS[name])


def test_kill_matrix_marks_declared_missed_and_extra_catches_and_names_survivors():
    from conformance.killmatrix import MutantRow, render, tabulate
    from conformance.results import CheckResult

    rows = [MutantRow("a", "bug a", {"c1", "c2"}), MutantRow("b", "bug b", {"c1"})]
    results = [CheckResult(id=cid, impl=f"mutant:{name}", title="", section="", status=status)
               for name, cid, status in [("a", "c1", "failed"), ("a", "c2", "passed"), ("a", "c3", "error"),
                                         ("b", "c1", "passed"), ("b", "c2", "passed")]]
    rows = tabulate(rows, results)
    assert (rows[0].missed, rows[0].unexpected, rows[1].killed) == ({"c2"}, {"c3"}, False)
    text = render(rows, ["c1", "c2", "c3"])
    assert "a  x!+" in text and "b  !. " in text
    assert "kill rate: 1/2 = 50.0%" in text and "survivors: b" in text
