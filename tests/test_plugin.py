"""The pytest plugin as a black box (pytester): options, parametrisation, statuses, xdist."""

import json

import pytest
from conftest import adapter_path

from conformance.cli import checks_dir


def run_checks(pytester, *args):
    """pytest over the checks, from pytester's folder. ``-o addopts=``: an --impl path under tests/adapters makes
    this project the common ancestor of the arguments, and pytest then read its pyproject's addopts (``-n 2``: every
    such run started two xdist workers, each with its own isolated adapter), which a user's run never gets."""
    return pytester.runpytest_subprocess(str(checks_dir()), "-p", "no:cacheprovider", "--import-mode=importlib",
                                         "-o", "addopts=", *args)


def test_without_impl_the_checks_are_skipped_and_the_plugin_is_inert(pytester):
    result = run_checks(pytester)
    result.assert_outcomes(skipped=len(_collected(pytester)))
    result.stdout.no_fnmatch_line("*== transformer-conformance:*")


def _collected(pytester):
    result = run_checks(pytester, "--collect-only", "-q")
    return [line for line in result.outlines if "::" in line]


def test_checks_are_parametrised_by_implementation(pytester):
    result = run_checks(pytester, "--impl", "numpy", "--impl", adapter_path("only_pe"), "--collect-only", "-q")
    ids = [line for line in result.outlines if "::" in line]
    assert any("[numpy]" in i for i in ids) and any("only_pe.py]" in i for i in ids)


def test_unloadable_impl_is_a_usage_error_naming_the_fix(pytester):
    result = run_checks(pytester, "--impl", adapter_path("no_conventions"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*declares no conventions. Fix: add*Conventions(*"])


def test_not_implemented_parts_are_skips_with_reason(pytester):
    result = run_checks(pytester, "--impl", adapter_path("only_pe"), "-rs", "-k", "layer_norm")
    result.stdout.fnmatch_lines(["*not implemented: *does not provide layer_norm*"])
    assert result.ret == pytest.ExitCode.OK


def test_summary_and_json_report_options(pytester):
    result = run_checks(pytester, "--impl", "numpy", "--conformance-summary", "--conformance-json", "out.json",
                        "-k", "attention_rows_sum_to_one or attention_matches_formula")
    result.stdout.fnmatch_lines(["*== transformer-conformance: numpy ==*", "*PASS*attention_rows_sum_to_one*"])
    report = json.loads((pytester.path / "out.json").read_text())
    assert report["schema"] == "transformer-conformance/report"
    assert [(c["id"], c["status"]) for c in report["checks"]] == [
        ("attention_matches_formula", "passed"), ("attention_rows_sum_to_one", "passed")]


# Checks from three files, so that both workers get some.
PARALLEL_RUN = ("--impl", "numpy", "-k", "layer_norm or pe_ or lrate")


def assert_parallel_run_gives_the_same_results_as_a_serial_run(pytester, *args):
    serial = run_checks(pytester, *args, "--conformance-json", "serial.json")
    parallel = run_checks(pytester, *args, "--conformance-json", "parallel.json", "-n", "2", "--dist", "loadfile")
    assert serial.ret == parallel.ret

    def outcomes(name):
        report = json.loads((pytester.path / name).read_text())
        return sorted((c["id"], c["status"], c["message"]) for c in report["checks"])

    assert outcomes("serial.json") == outcomes("parallel.json")
    return outcomes("serial.json")


def test_parallel_run_of_a_selection_gives_the_same_results_as_a_serial_run(pytester):
    outcomes = assert_parallel_run_gives_the_same_results_as_a_serial_run(pytester, *PARALLEL_RUN)
    assert len(outcomes) >= 15


@pytest.mark.slow
def test_parallel_run_gives_the_same_results_as_a_serial_run(pytester):
    """The whole catalogue twice (slow): the default selection runs
    test_parallel_run_of_a_selection_gives_the_same_results_as_a_serial_run."""
    assert_parallel_run_gives_the_same_results_as_a_serial_run(pytester, "--impl", "numpy")


def test_the_plugin_objects_handed_to_pytest_hold_no_property_that_builds_something():
    """pytest before 8.4 reads every attribute of a plugin object while it looks for fixtures: a ``report``
    property read then built the run's report before the first verdict, and certify printed 0 passed, exit 0."""
    import inspect

    from conformance.run.plugin import ResultCollector
    from conformance.run.runs import Run
    from conformance.run.session import AwaitWorker, FreezeCollected

    for plugin in (ResultCollector, Run, FreezeCollected, AwaitWorker):
        assert not [name for name, value in inspect.getmembers(plugin) if isinstance(value, property)], plugin


def test_a_report_that_lost_verdicts_fails_closed(certify, monkeypatch):
    """certify never prints a report that holds fewer verdicts than the run gave: an internal error (exit 3), not a
    pass (pytest before 8.4 once made the report before the first verdict: '0 passed', exit 0)."""
    from conformance.run.plugin import ResultCollector

    built = ResultCollector.report
    monkeypatch.setattr(ResultCollector, "report", lambda self: {**built(self), "checks": []})
    run = certify("reference", "-k", "pe_has_one_row_per_position")
    assert run.code == 3, run.out
    assert "the report holds 0 of the run's 1 verdicts" in run.err
