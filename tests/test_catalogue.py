"""The check catalogue of issue 4 (multi-head attention, FFN, encoder, decoder, masks, model, invariances,
shapes) holds itself to the Hypothesis rule "any bug ... is a bug in our test suite too":

* the reference passes every one of these checks;
* every mutant in ``tests/adapters/`` (a module with ``CAUGHT_BY``) fails exactly the checks its
  ``CAUGHT_BY`` names and errors on exactly those in ``ERRORED``; ``MESSAGES`` pins the likely cause
  or first divergence its failure messages must name;
* every check of the catalogue is failed by at least one mutant.

The expectations are read from the mutant files without importing them (``ast``), so collection
needs no torch.
"""

import ast
from pathlib import Path

import pytest
from conftest import ADAPTERS, adapter_path

CATALOGUE_MODULES = (
    "test_multi_head_attention", "test_feed_forward", "test_encoder", "test_decoder", "test_masks",
    "test_model", "test_invariances", "test_shapes",
)
SELECT = " or ".join(CATALOGUE_MODULES)  # pytest -k matches the module names


def declared(path: Path) -> dict:
    """The literal CAUGHT_BY, ERRORED and MESSAGES a mutant file assigns (empty when it has none)."""
    found = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in ("CAUGHT_BY", "ERRORED", "MESSAGES"):
                found[name] = ast.literal_eval(node.value)
    return found


MUTANTS = {path.stem: found for path in sorted(ADAPTERS.glob("*.py")) if "CAUGHT_BY" in (found := declared(path))}


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


def test_reference_passes_every_catalogue_check(certify):
    run = certify("reference", "-k", SELECT)
    assert run.report is not None, run.err
    statuses = run.statuses()
    assert statuses, "no catalogue check ran"
    assert {cid: s for cid, s in statuses.items() if s != "passed"} == {}, run.out
    caught = set().union(*(set(m["CAUGHT_BY"]) for m in MUTANTS.values()))
    # Every check is caught by some mutant, and -k selected no check outside the catalogue.
    assert set(statuses) == caught, describe_difference(set(statuses), caught)


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_mutant_fails_exactly_the_checks_it_names(certify, mutant):
    expected = MUTANTS[mutant]
    run = certify(adapter_path(mutant), "-k", SELECT)
    assert run.report is not None, run.err
    failed, errored = run.with_status("failed"), run.with_status("error")
    assert failed == set(expected["CAUGHT_BY"]), describe_difference(failed, set(expected["CAUGHT_BY"]))
    assert errored == set(expected.get("ERRORED", ())), describe_difference(errored, set(expected.get("ERRORED", ())))
    messages = {check["id"]: check["message"] for check in run.report["checks"]}
    for check_id, text in expected.get("MESSAGES", {}).items():
        assert text in messages[check_id], f"{check_id}: {text!r} not in\n{messages[check_id]}"
