"""Running the checks: the pytest command line of every run, the run's one report, its exit code.

``cli`` parses arguments and picks a command; ``grading`` grades submissions; the kill matrix certifies
every mutant: all three run the checks through here, so there is one way from a command to a report. What a
run is travels on its ``Run`` (``conformance.run.runs``), which ``pytest.main`` gets as a plugin object.
Exit codes (README.md): 0 every implemented check passed, 1 a check failed or errored, 2 broken
invocation or unloadable implementation, 3 internal error, 5 no check ran.
"""

from __future__ import annotations

import contextlib
import io
import sys
from dataclasses import dataclass
from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL, EXIT_NOTHING_RAN = 0, 1, 2, 3, 5

# Nothing heavier than the standard library at the top: ``cli`` imports this module, and ``--help`` and
# ``list`` must start as fast as a bare ``import numpy`` (tests/test_cli_startup.py). Each function imports what
# it needs.


class _NotLoadedConventions:
    """``UnloadableAdapter.conventions``: the defaults, framework "(not loaded)", built on first read."""

    def __get__(self, instance, owner):
        from conformance.adapter import Conventions

        conventions = Conventions(framework="(not loaded)")
        owner.conventions = conventions  # one object, as a plain class attribute from now on
        return conventions


class UnloadableAdapter:
    """Stands in for a submission that could not be loaded: it has every part, and each raises the load
    error, so each check is an *error* that says why and the report lists the whole catalogue."""

    not_loaded = True  # Candidate.loaded reads it off the class
    conventions = _NotLoadedConventions()

    def __init__(self, reason: str, isolation: dict | None = None):
        from conformance.adapter import MODEL_PARTS

        self.reason = reason
        self.isolation = isolation or {"isolated": False}  # how it was to run: the report's record
        self.load_warnings = [f"could not be loaded: {reason}"]
        self.model_class = type("NotLoadedModel", (), {part: self._fail for part in MODEL_PARTS})

    def _fail(self, *args, **kwargs):
        from conformance.errors import AdapterError

        raise AdapterError(f"not run: the implementation could not be loaded: {self.reason}",
                           part="import", expected="a loaded implementation", actual="load error")

    def __getattr__(self, name: str):
        from conformance.adapter import ADAPTER_PARTS

        if name in ADAPTER_PARTS:
            return self._fail
        raise AttributeError(name)


def unloadable_candidate(spec: str, reason: str):
    from conformance.boundary.candidate import Candidate

    candidate = Candidate(UnloadableAdapter(reason), name=spec, timeout_s=None)
    candidate.load_warnings = [f"could not be loaded: {reason}"]
    return candidate


def checks_dir() -> Path:
    import conformance.judging.checks

    return Path(conformance.judging.checks.__file__).parent


# The plugins the checks run with, named: no other installed pytest plugin is loaded (pytest >= 8.4). Besides
# keeping the run's plugins the suite's own, it keeps pytest from marking every plugin's distribution for
# assertion rewriting: hypothesis, imported by the suite's plugin after that, was rewritten from source at
# every run, syrupy and xdist loaded for nothing.
PLUGINS = ("conformance.run.plugin", "_hypothesis_pytestplugin")


def plugin_args() -> list[str]:
    import pytest

    if tuple(pytest.version_tuple[:2]) < (8, 4):  # no --disable-plugin-autoload: the installed plugins load
        return []
    return ["--disable-plugin-autoload", *(arg for name in PLUGINS for arg in ("-p", name))]


def workers_args(workers: int, dist: str = "loadfile") -> list[str]:
    """Run the checks in ``workers`` processes (pytest-xdist), loaded by name as the other plugins. ``loadfile``
    keeps a module on one worker (the training module's one convergence run per candidate)."""
    return [*(["-p", "xdist.plugin"] if plugin_args() else []), "-n", str(workers), "--dist", dist]


def pytest_argv(*options: str) -> list[str]:
    """The pytest command line of every run of the checks (certify, list, the kill matrix): the checks'
    folder and its own ini, no cache, no project addopts, the suite's plugins; then ``options``, pytest's own.
    What the run is (its implementations and options) travels on the ``Run`` handed to ``pytest.main``."""
    return [str(checks_dir()), "-p", "no:cacheprovider", "--import-mode=importlib", "-o", "addopts=",
            "--rootdir", str(checks_dir()), "-c", str(checks_dir() / "pytest.ini"), *plugin_args(), *options]


def run_argv(run) -> list[str]:
    """pytest's own options for ``run``: its workers, hypothesis's seed under the grade profile, its output."""
    options = run.options
    argv = pytest_argv(*(workers_args(options.workers) if options.workers > 1 else ()))
    if options.profile == "grade":  # examples drawn from the run's seed: a submission cannot predict them
        argv.append(f"--hypothesis-seed={options.seed}")
    return argv + (["-v"] if options.verbose else ["-q", "--tb=no", "--no-header"])


@dataclass
class Outcome:
    """What one run of the checks came to: its exit code (README.md) and its report (None where no check ran to
    a report: a broken invocation, an internal error)."""

    code: int
    report: dict | None = None
    interrupted: bool = False  # stopped by Ctrl-C (or a notebook's stop button): the report holds the checks run
    load_error: str | None = None  # why the implementation could not be loaded (the report's one error says it)


def load_failed(run, message: str, *, echo: bool = True) -> Outcome:
    """The outcome of a run whose implementation could not be loaded: its report holds one error, which says why;
    ``echo``: said on stderr too (the command line's)."""
    from conformance.reports.safe_text import visible_text

    spec = run.impls[0]
    if echo:
        print(visible_text(f"transformer-conformance: cannot load {spec!r}: {message}"), file=sys.stderr)
    report = load_error_report(run, message)
    if run.options.json:
        from conformance.reports.json_report import render

        Path(run.options.json).write_text(render(report))
        if echo:
            print(f"JSON report written to {run.options.json}")
    return Outcome(EXIT_USAGE, report, load_error=message)


class AwaitWorker:
    """A pytest plugin of the CLI's run: once the checks are collected (while an isolated worker imported the
    implementation), wait for the worker's hello. If the implementation could not be loaded: ``exit`` ends
    the session (certify reports the load error), ``replace`` makes every check an error naming it (grade)."""

    def __init__(self, candidate, *, on_failure: str):
        self.candidate, self.on_failure = candidate, on_failure

    def pytest_collection_finish(self, session):
        import pytest

        from conformance.errors import LoadError

        wait = getattr(self.candidate.adapter, "wait", None)
        if wait is None:
            return
        try:
            wait()
        except LoadError as exc:
            # the session's reports need an adapter, and the record of the worker it was to run in
            isolation = self.candidate.adapter.unloaded_summary()
            self.candidate.adapter = UnloadableAdapter(str(exc), isolation)
            if self.on_failure == "exit":
                pytest.exit(f"cannot load the implementation: {exc}", returncode=pytest.ExitCode.USAGE_ERROR)


def load_error_report(run, message: str) -> dict:
    """The report of a run whose implementation could not be loaded: one error, not conformant."""
    from conformance.results import CheckResult
    from conformance.run.report import build_report

    spec = run.impls[0]
    result = CheckResult(id="implementation_loads", impl=spec, section="Loading", status="error",
                         title="The implementation imports, declares its conventions and provides a part",
                         message=f"cannot load {spec!r}: {message}", part="import",
                         expected="an adapter", actual="no adapter")

    conventions = UnloadableAdapter.conventions.as_dict()  # the defaults, framework "(not loaded)"
    metadata = {"seed": run.options.seed, "implementations": [
        {"name": spec, "conventions": conventions, "provided_parts": [], "load_warnings": [message],
         "loaded": False, "isolation": load_error_isolation(run)}]}
    return build_report([result], metadata)


def load_error_isolation(run) -> dict:
    """How the implementation that could not be loaded was to run: isolated (the default for a path), with
    the limits of the run, the variables passed among them, or in-process."""
    from conformance.boundary.loading import should_isolate

    if not should_isolate(run.impls[0], run.options.isolate):
        return {"isolated": False}
    return {"isolated": True, "limits": run.load_options()["limits"].as_dict()}


class FreezeCollected:
    """The objects alive once the checks are collected (torch, hypothesis, pytest, the suite: about a million) kept
    out of the garbage collector's full walks (``gc.freeze``) until ``thaw`` after pytest has ended, its own closing
    ``gc.collect()`` calls included: the full collections of a run then walk what the checks allocate, not the
    libraries. Not done when something else froze objects first (the suite's own tests do, per process)."""

    frozen = False

    def pytest_collection_finish(self, session):
        import gc

        if gc.get_freeze_count() == 0:
            gc.freeze()
            self.frozen = True

    def thaw(self) -> None:
        import gc

        if self.frozen:
            gc.unfreeze()
            self.frozen = False


def run_checks(run, *, quiet_usage: bool = False) -> int:
    """Run the checks of ``run`` (one implementation), print its report and write its renderings; the exit code."""
    return checks_outcome(run, quiet_usage=quiet_usage).code


def checks_outcome(run, *, quiet_usage: bool = False, echo: bool = True) -> Outcome:
    """Run the checks of ``run`` (one implementation) and write its renderings; ``echo``: print its report and say
    what was written (the command line's; the Python API shows the report it returns instead)."""
    import pytest

    from conformance.reports.terminal import render
    from conformance.run.plugin import ResultCollector
    from conformance.run.progress import ProgressDisplay

    options = run.options
    collector = ResultCollector()  # handed to the plugin: the run's results and its one report
    captured = io.StringIO()
    freezer = FreezeCollected()
    with ProgressDisplay.for_terminal(options.progress) as progress, \
            contextlib.redirect_stdout(sys.stdout if options.verbose else captured):
        progress.compile_clocks = lambda: compile_clocks(run)
        try:
            code = pytest.main(run_argv(run), plugins=[run, collector, progress, freezer, *run.plugins])
        finally:
            freezer.thaw()
    if collector.config is None or code in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
        if not (quiet_usage and code == pytest.ExitCode.USAGE_ERROR):
            sys.stderr.write(captured.getvalue())
        return Outcome(EXIT_USAGE if code == pytest.ExitCode.USAGE_ERROR else EXIT_INTERNAL)
    report = collector.report()
    if len(report["checks"]) != len(collector.results):  # fail closed: a report that lost verdicts is no pass
        print(f"transformer-conformance: internal error: the report holds {len(report['checks'])} of the run's"
              f" {len(collector.results)} verdicts", file=sys.stderr)
        return Outcome(EXIT_INTERNAL)
    shown = print_rendering("the terminal report", lambda: print(render(report), end="")) if echo else True
    if options.json:
        if not Path(options.json).is_file():  # fail closed: no report, no pass
            print(f"transformer-conformance: the JSON report {options.json} was not written", file=sys.stderr)
            return Outcome(EXIT_INTERNAL, report)
        if echo:
            print(f"JSON report written to {options.json}")
    written = print_rendering("the reports asked for", lambda: write_renderings(run.renderings, report, echo=echo))
    if not (shown and written):  # the verdicts are in the JSON report; a rendering the suite could not make is its
        return Outcome(EXIT_INTERNAL, report)  # own fault
    interrupted = code == pytest.ExitCode.INTERRUPTED  # Ctrl-C, or a notebook's stop button
    unobserved = [d for d in report.get("declared_deviations", []) if not d["observed"]]
    if options.strict and unobserved:
        return Outcome(EXIT_FAILED, report, interrupted)  # a declared deviation the suite does not see
    return Outcome(exit_code(code, collector.results), report, interrupted)


def compile_clocks(run) -> list:
    """The clocks of the JAX compilations of the run's candidates (none before JAX is imported)."""
    from conformance.boundary.isolation.frameworks import compile_clock_of

    return [clock for clock in map(compile_clock_of, run.candidates.values()) if clock is not None]


def print_rendering(what: str, rendering) -> bool:
    """Run ``rendering``; whatever it raises is said on stderr, and the run goes on to write what is left (the
    JSON report, a grade's score and results.json): no string in a report may cost the report. Whether it ran."""
    from conformance.reports.safe_text import visible_text

    try:
        rendering()
    except Exception as exc:  # noqa: BLE001 - any failure of a rendering, said and survived
        print(visible_text(f"transformer-conformance: internal error: {what} could not be written:"
                           f" {type(exc).__name__}: {exc}"), file=sys.stderr)
        return False
    return True


def write_renderings(paths: dict[str, str], report: dict, *, echo: bool = True) -> None:
    """--html, --junit, --markdown, --badge: rendered from the run's report."""
    from conformance.reports import formats

    for written in formats.write(report, paths):
        if echo:
            print(written.line())


def exit_code(pytest_code, results) -> int:
    from conformance.results import FAILING, RAN, count_statuses

    counts = count_statuses(results)
    if any(counts[status] for status in FAILING):
        return EXIT_FAILED
    if pytest_code == 2:  # interrupted
        return EXIT_INTERNAL
    if not any(counts[status] for status in RAN):
        return EXIT_NOTHING_RAN
    return EXIT_OK
