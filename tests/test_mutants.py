"""Every mutant is caught by every check its docstring promises (CAUGHT_BY).

A mutant that survives is a hole in the suite. Only the named checks run here, so the test stays
cheap; `transformer-conformance mutants` runs the whole catalogue against every mutant and lists the
unexpected catches as well (the kill matrix).
"""

import importlib

import pytest

from conformance.implementations import mutants


def selection(check_ids: set[str]) -> str:
    """A -k expression for the checks (parameters dropped: -k takes no brackets)."""
    return " or ".join(sorted({check_id.split("[")[0] for check_id in check_ids}))


# Training mutants train the toy model (up to 1,500 steps): run them with `python -m pytest -m slow`.
NAMES = [pytest.param(name, marks=pytest.mark.slow) if name.startswith(("train", "dropout")) else name
         for name in mutants.names()]


@pytest.mark.parametrize("name", NAMES)
def test_mutant_is_caught_by_the_checks_it_names(certify, name):
    expected = importlib.import_module(f"conformance.implementations.mutants.{name}").CAUGHT_BY
    assert expected, f"mutant {name} names no check that catches it"
    run = certify(f"mutant:{name}", "-k", selection(expected))
    caught = run.with_status("failed") | run.with_status("error")
    assert expected <= caught, f"not caught by: {sorted(expected - caught)}"
    assert run.code == 1
