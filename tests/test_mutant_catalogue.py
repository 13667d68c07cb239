"""The mutant catalogue holds the suite to the Hypothesis rule "any bug ... is a bug in our test suite too".

* the reference passes every check, and every one of those checks is failed by at least one mutant;
* every mutant of ``implementations/mutants/``, certified over the whole suite (``--no-training``; with
  training for a mutant whose table says ``training = true``, marked slow), fails exactly the checks its
  ``caught_by`` names, errors on exactly those in ``errored``, is advised on exactly those in ``advisory``
  (the suite's conventions, docs/claims.md), and its failure messages contain what ``messages`` pins (the
  likely cause, the diagnosis, the first divergence); all of it declared in ``implementations/mutants/expected.toml``;
* each half-precision mutant, certified ``--dtype float16`` and ``bfloat16``, does exactly what its ``[name.float16]``
  and ``[name.bfloat16]`` tables declare (slow), and the reference passes every check in both dtypes (slow);
* the NumPy mutants import without torch.

The declarations and the bugs are read without importing the mutants, so collection needs no torch.
``transformer-conformance mutants`` prints the same facts as a kill matrix.
"""

import ast
import subprocess
import sys

import pytest

import conformance.implementations.mutants as mutants_package
from conformance.implementations.mutants import EXPECTED_PATH, Expected, expected, render

MUTANTS = expected()
FORWARD = sorted(name for name, e in MUTANTS.items() if not e.training)
TRAINING = sorted(name for name, e in MUTANTS.items() if e.training)
MODULE_DECLARATIONS = ("CAUGHT_BY", "ERRORED", "ADVISORY", "MESSAGES", "TRAINING", "CAUGHT_BY_TRAINING")


def source(name: str) -> str:
    return EXPECTED_PATH.with_name(f"{name}.py").read_text()


@pytest.fixture
def one_torch_thread():
    """Hundreds of tiny tensors per run: a second intra-op thread only makes each op wait on a busy machine."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def describe_difference(got: set, expected: set) -> str:
    return f"unexpected: {sorted(got - expected)}; missing: {sorted(expected - got)}"


def assert_exactly_as_declared(run, declared: Expected):
    assert run.report is not None, run.err
    failed, errored, advised = run.with_status("failed"), run.with_status("error"), run.with_status("advisory")
    assert failed == declared.caught_by, describe_difference(failed, declared.caught_by)
    assert errored == declared.errored, describe_difference(errored, declared.errored)
    assert advised == declared.advisory, describe_difference(advised, declared.advisory)
    messages = {check["id"]: check["message"] for check in run.report["checks"]}
    for check_id, text in declared.messages.items():
        assert text in messages[check_id], f"{check_id}: {text!r} not in\n{messages[check_id]}"
    assert run.code == (1 if declared.caught_by or declared.errored else 0)  # advisory alone: exit 0


def test_every_mutant_has_one_table_and_declares_its_bug_in_its_docstring():
    assert len(MUTANTS) >= 30
    assert sorted(MUTANTS) == mutants_package.names(), "a mutant without a table, or a table without a mutant"
    for name, declared in MUTANTS.items():
        # a mutant of a suite's convention only (a -1e9 fill, a 1,024-row table) is advised on, never failed
        assert declared.caught_in_some_dtype, f"{name} is caught by no check, in no dtype"
        doc = ast.get_docstring(ast.parse(source(name))) or ""
        assert "§" in doc, f"{name}: the docstring names no paper section"
        assert mutants_package.bug(name) == doc.splitlines()[0]


def test_declarations_live_only_in_the_expectations_file():
    """One home: a module that still assigned CAUGHT_BY (or the like) would be a second, unread copy."""
    for name in MUTANTS:
        assigned = {target.id for node in ast.parse(source(name)).body if isinstance(node, ast.Assign)
                    for target in node.targets if isinstance(target, ast.Name)}
        assert not assigned & set(MODULE_DECLARATIONS), f"{name} assigns {sorted(assigned & set(MODULE_DECLARATIONS))}"


def test_expectations_file_is_in_its_written_layout():
    """tools/measure_mutants.py --write renders the whole file; a hand edit in another layout would be lost."""
    assert render(MUTANTS) == EXPECTED_PATH.read_text()


def test_expectations_reject_an_unknown_key(tmp_path):
    path = tmp_path / "expected.toml"
    path.write_text('[m]\ncaught_by = ["c"]\nerrored = []\ncaugth_by = ["d"]\n')
    with pytest.raises(ValueError, match=r"\[m\]: unknown keys \['caugth_by'\]"):
        expected(path)


@pytest.mark.usefixtures("one_torch_thread")
def test_reference_passes_every_check_and_each_check_fails_on_some_mutant(certify):
    run = certify("reference", "--no-training")
    assert run.report is not None, run.err
    statuses = run.statuses()
    assert {cid: s for cid, s in statuses.items() if s != "passed"} == {}, run.out
    caught = set().union(*(declared.caught for declared in MUTANTS.values()))
    assert set(statuses) <= caught, f"checks no mutant fails: {sorted(set(statuses) - caught)}"


# Half precision: the mutants with a table for a half dtype, certified in it ([name.float16], [name.bfloat16]).
HALF_TABLES = sorted((name, dtype) for name, e in MUTANTS.items() for dtype in e.dtypes)
HALF_SAMPLE = {("half_softmax_without_max_subtraction", "float16"): "an overflow, named by where its NaN lie",
               ("half_positional_table_in_dtype", "bfloat16"): "a precision hazard bfloat16 shows at position 257"}


def test_every_half_precision_check_fails_on_some_mutant_in_some_dtype():
    from conformance.judging.checks import test_half_precision as hazards

    checks = {name.removeprefix("test_") for name in dir(hazards) if name.startswith("test_")}
    caught = set().union(*(table.caught for e in MUTANTS.values() for table in e.dtypes.values()))
    assert checks and checks <= caught, f"hazard checks no mutant fails: {sorted(checks - caught)}"
    assert {dtype for _, dtype in HALF_TABLES} == {"float16", "bfloat16"}


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize(("name", "dtype"), sorted(HALF_SAMPLE))
def test_sampled_half_precision_mutant_fails_exactly_the_checks_it_declares_among_them(certify, name, dtype):
    declared = MUTANTS[name].dtypes[dtype]
    assert_exactly_as_declared(certify(f"mutant:{name}", "--no-training", "--dtype", dtype,
                                       *declared_checks(declared)), declared)


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize(("name", "dtype"), HALF_TABLES)
def test_half_precision_mutant_fails_exactly_the_checks_it_declares(certify, name, dtype):
    assert_exactly_as_declared(certify(f"mutant:{name}", "--no-training", "--dtype", dtype),
                               MUTANTS[name].dtypes[dtype])


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_reference_passes_every_check_in_half_precision(certify, dtype):
    run = certify("reference", "--no-training", "--dtype", dtype)
    assert run.report is not None, run.err
    assert run.report["dtype"] == dtype
    assert {cid: s for cid, s in run.statuses().items() if s != "passed"} == {}, run.out


# Every run certifies one mutant of each kind on the checks its table names; every forward mutant over
# the whole catalogue, where an unexpected failure of any other check shows, is marked slow and run by .ci/run
# (`python -m pytest -m slow`) and by `transformer-conformance mutants`.
SAMPLE = {
    "attention_no_scaling": "a NumPy component mutant, named by the catalogue on the attention checks",
    "pe_sine_cosine_swapped": "a published-number mutant: a fact and its randomised twin fail",
    "label_smoothing_missing": "a loss mutant on the NumPy implementation",
    "schedule_no_warmup": "a learning-rate mutant (§5.3)",
    "pre_norm": "a torch model mutant, localised layer by layer",
    "extra_final_layer_norm": "a structure no layer shows: found after the last layer",
    "greedy_never_stops": "a decoding mutant",
    "parameter_count_output_bias": "a parameter-count mutant, decomposed by counts",
    "sequence_first_outputs": "wrong shapes: the suite's validation reports errors, not failures",
}


def declared_checks(declared: Expected) -> tuple[str, str]:
    """``-k`` for the checks a table names (caught, errored, advised, with a message), parametrised ones by name."""
    named = declared.caught_by | declared.errored | declared.advisory | set(declared.messages)
    return "-k", " or ".join(sorted({check_id.split("[")[0] for check_id in named}))


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("name", sorted(SAMPLE))
def test_sampled_mutant_fails_exactly_the_checks_it_declares_among_them(certify, name):
    """On the checks its table names: each fails, errs or is advised as declared, with the declared messages and
    diagnoses. That no other check fails is asserted over the whole catalogue, for every forward mutant, by
    test_mutant_fails_exactly_the_checks_it_declares (slow)."""
    run = certify(f"mutant:{name}", "--no-training", *declared_checks(MUTANTS[name]))
    assert_exactly_as_declared(run, MUTANTS[name])


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("name", FORWARD)
def test_mutant_fails_exactly_the_checks_it_declares(certify, name):
    assert_exactly_as_declared(certify(f"mutant:{name}", "--no-training"), MUTANTS[name])


def test_the_sample_is_drawn_from_the_forward_catalogue():
    assert set(SAMPLE) <= set(FORWARD), sorted(set(SAMPLE) - set(FORWARD))


# Training mutants train the toy model (up to 1,500 steps): run them with `python -m pytest -m slow`;
# tests/test_training.py runs their cheap training checks (a few updates each) in every run.
@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("name", TRAINING)
def test_training_mutant_fails_exactly_the_checks_it_declares(certify, name):
    assert_exactly_as_declared(certify(f"mutant:{name}"), MUTANTS[name])


# Run with torch blocked: "import torch" raises ImportError when sys.modules["torch"] is None.
WITHOUT_TORCH = """
import importlib, sys
sys.modules["torch"] = None
from conformance.implementations import mutants
from conformance.implementations.numpy_impl.adapter import NumpyAdapter
for name in mutants.names():
    try:
        module = importlib.import_module("conformance.implementations.mutants." + name)
    except ImportError:
        continue
    print(name, isinstance(module.adapter, NumpyAdapter), module.adapter.conventions.dtype)
"""


def numpy_based(name: str) -> bool:
    """A mutant built on the NumPy implementation (it imports it), as opposed to the torch reference."""
    return "conformance.implementations.numpy_impl" in source(name)


def test_numpy_mutants_import_without_torch():
    """A NumPy or JAX candidate is diagnosed without torch: every NumPy mutant imports with torch blocked,
    and is a NumpyAdapter in float64; a torch mutant does not import."""
    out = subprocess.run([sys.executable, "-c", WITHOUT_TORCH], capture_output=True, text=True, check=True).stdout
    imported = {name: rest for name, *rest in (line.split() for line in out.splitlines())}
    assert set(imported) == {name for name in mutants_package.names() if numpy_based(name)}
    assert all(rest == ["True", "float64"] for rest in imported.values()), imported
    assert len(imported) >= 35


def test_kill_matrix_marks_declared_missed_and_extra_catches_and_names_survivors():
    from conformance.results import CheckResult
    from conformance.run.killmatrix import MutantRow, render, tabulate

    rows = [MutantRow("a", "bug a", {"c1", "c2"}), MutantRow("b", "bug b", {"c1"})]
    results = [CheckResult(id=cid, impl=f"mutant:{name}", title="", section="", status=status)
               for name, cid, status in [("a", "c1", "failed"), ("a", "c2", "passed"), ("a", "c3", "error"),
                                         ("b", "c1", "passed"), ("b", "c2", "passed")]]
    rows = tabulate(rows, results)
    assert (rows[0].missed, rows[0].unexpected, rows[1].killed) == ({"c2"}, {"c3"}, False)
    text = render(rows, ["c1", "c2", "c3"])
    assert "a  x!+" in text and "b  !. " in text
    assert "kill rate: 1/2 = 50.0%" in text and "survivors: b" in text


def test_a_convention_only_mutant_advised_as_declared_is_neither_killed_nor_a_survivor():
    from conformance.results import CheckResult
    from conformance.run.killmatrix import MutantRow, render, tabulate

    rows = [MutantRow("a", "bug a", {"c1"}), MutantRow("conv", "fill -1e9", {"c2"}, convention_only=True),
            MutantRow("silent", "fill -1e9 too", {"c2"}, convention_only=True)]
    results = [CheckResult(id=cid, impl=f"mutant:{name}", title="", section="", status=status)
               for name, cid, status in [("a", "c1", "failed"), ("conv", "c2", "advisory"),
                                         ("silent", "c2", "passed")]]
    rows = tabulate(rows, results)
    assert [(row.killed, row.advised) for row in rows] == [(True, False), (False, True), (False, False)]
    text = render(rows, ["c1", "c2"])
    assert "ADVISED" in text and "kill rate: 1/2 = 50.0% (and 1 convention-only mutants advised on: conv)" in text
    assert "survivors: silent" in text
