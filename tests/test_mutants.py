"""Every mutant fails exactly the checks its docstring promises (CAUGHT_BY), no more and no fewer.

A mutant that survives is a hole in the suite; a check that fails on a mutant without being listed is
an undocumented side effect (or a false positive) that the catalogue should say out loud.
"""

import importlib

import pytest

from conformance.implementations import mutants

TRAINING = ("--no-training",)


@pytest.mark.parametrize("name", mutants.names())
def test_mutant_fails_exactly_the_checks_it_names(certify, name):
    expected = importlib.import_module(f"conformance.implementations.mutants.{name}").CAUGHT_BY
    run = certify(f"mutant:{name}", *(() if name.startswith("train") else TRAINING))
    caught = run.with_status("failed") | run.with_status("error")
    assert caught == expected, f"missed: {sorted(expected - caught)}; also failed: {sorted(caught - expected)}"
    assert run.code == 1
