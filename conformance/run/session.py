"""Running the checks: the pytest command line of every run, the candidate's load, the run's one report.

``cli`` parses arguments and picks a command; ``grading`` grades submissions; the kill matrix certifies
every mutant: all three run the checks through here, so there is one way from a command to a report.
Exit codes (README.md): 0 every implemented check passed, 1 a check failed or errored, 2 broken
invocation or unloadable implementation, 3 internal error, 5 no check ran.
"""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL, EXIT_NOTHING_RAN = 0, 1, 2, 3, 5

# Nothing heavier than the standard library at the top: ``cli`` imports this module, and ``--help`` and
# ``list`` must start as fast as a bare ``import numpy`` (issue 16). Each function imports what it needs.


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


def isolation_args(args) -> list[str]:
    flags = {True: ["--isolate"], False: ["--no-isolate"], None: []}[args.isolate]
    return flags + ["--worker-memory", str(args.worker_memory),
                    "--worker-total-timeout", str(args.worker_total_timeout),
                    *(arg for name in pass_env(args) for arg in ("--pass-env", name)),
                    *(arg for path in allow_read(args) for arg in ("--allow-read", path))]


def pass_env(args) -> tuple[str, ...]:
    """The variables named by --pass-env, once each, in the order given."""
    return tuple(dict.fromkeys(getattr(args, "pass_env", None) or ()))


def allow_read(args) -> tuple[str, ...]:
    """The paths named by --allow-read, once each, in the order given."""
    return tuple(dict.fromkeys(getattr(args, "allow_read", None) or ()))


def load_options(args, *, hide_suite_code: bool = False, own_folder: str | None = None) -> dict:
    from conformance.boundary.isolation.proxy import Limits

    total = args.worker_total_timeout
    limits = Limits(memory_mib=args.worker_memory, total_s=total, cpu_s=int(total), hide_suite_code=hide_suite_code,
                    pass_env=pass_env(args), own_folder=own_folder, allow_read=allow_read(args))
    return {"timeout_s": args.timeout, "isolate": args.isolate, "limits": limits, "threads": args.threads}


# The plugins the checks run with, named: no other installed pytest plugin is loaded (pytest >= 8.4). Besides
# keeping the run's plugins the suite's own, it keeps pytest from marking every plugin's distribution for
# assertion rewriting: hypothesis, imported by the suite's plugin after that, was rewritten from source at
# every run (about 70 modules, a second of start-up), syrupy and xdist loaded for nothing.
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


def pytest_argv(impls: list[str], *options: str) -> list[str]:
    """The pytest command line of every run of the checks (certify, list, the kill matrix): the checks'
    folder and its own ini, no cache, no project addopts, and an --impl per implementation."""
    argv = [str(checks_dir()), "-p", "no:cacheprovider", "--import-mode=importlib", "-o", "addopts=",
            "--rootdir", str(checks_dir()), "-c", str(checks_dir() / "pytest.ini"), *plugin_args()]
    for impl in impls:
        argv += ["--impl", impl]
    return argv + list(options)


def pytest_args(args) -> list[str]:
    argv = pytest_argv([args.impl], "--conformance-seed", str(args.seed), "--conformance-profile", args.profile,
                       "--check-timeout", str(args.timeout), "--conformance-threads", str(getattr(args, "threads", 1)))
    if args.json:
        argv += ["--conformance-json", args.json]
    if args.keyword:
        argv += ["--conformance-select", args.keyword]  # pytest's own -k would also match the implementation's name
    if args.no_training:
        argv.append("--no-training")
    if getattr(args, "no_diagnosis", False):
        argv.append("--conformance-no-diagnosis")
    if getattr(args, "strict", False):
        argv.append("--conformance-strict")
    if getattr(args, "deviations", None):
        argv += ["--conformance-deviations", args.deviations]
    if getattr(args, "no_cache", False):
        argv.append("--conformance-no-cache")
    if args.workers > 1:
        argv += workers_args(args.workers)
    if args.profile == "grade":  # examples drawn from the run's seed: a submission cannot predict them
        argv.append(f"--hypothesis-seed={args.seed}")
    argv += isolation_args(args)
    return argv + (["-v"] if args.verbose else ["-q", "--tb=no", "--no-header"])


def load_failed(args, message: str) -> int:
    print(f"transformer-conformance: cannot load {args.impl!r}: {message}", file=sys.stderr)
    if args.json:
        write_load_error_report(args, message)
        print(f"JSON report written to {args.json}")
    return EXIT_USAGE


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


def write_load_error_report(args, message: str) -> None:
    """The report of a run whose implementation could not be loaded: one error, not conformant."""
    from conformance.reports.json_report import render
    from conformance.results import CheckResult
    from conformance.run.report import build_report

    result = CheckResult(id="implementation_loads", impl=args.impl, section="Loading", status="error",
                         title="The implementation imports, declares its conventions and provides a part",
                         message=f"cannot load {args.impl!r}: {message}", part="import",
                         expected="an adapter", actual="no adapter")

    conventions = UnloadableAdapter.conventions.as_dict()  # the defaults, framework "(not loaded)"
    metadata = {"seed": args.seed, "implementations": [{"name": args.impl, "conventions": conventions,
                                                         "provided_parts": [], "load_warnings": [message],
                                                         "loaded": False, "isolation": load_error_isolation(args)}]}
    Path(args.json).write_text(render(build_report([result], metadata)))


def load_error_isolation(args) -> dict:
    """How the implementation that could not be loaded was to run: isolated (the default for a path), with
    the limits of the run, the variables passed among them, or in-process."""
    from conformance.boundary.loading import should_isolate

    if not should_isolate(args.impl, args.isolate):
        return {"isolated": False}
    return {"isolated": True, "limits": load_options(args)["limits"].as_dict()}


class FreezeCollected:
    """The objects alive once the checks are collected (torch, hypothesis, pytest, the suite: about a million) kept
    out of the garbage collector's full walks (``gc.freeze``) until ``thaw`` after pytest has ended, its own closing
    ``gc.collect()`` calls included. Measured on ``certify reference --no-training``: full collections 0.43-0.53 s,
    0.02-0.03 s with the collected objects frozen (the whole run 0.96 of the time, farm-bench 8 pairs;
    peak memory the same). Not done when something else froze objects first (the suite's own tests do, per process)."""

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


def run_checks(args, plugins=(), *, quiet_usage: bool = False) -> int:
    import pytest

    from conformance.reports.terminal import render
    from conformance.run.plugin import ResultCollector
    from conformance.run.progress import ProgressDisplay
    from conformance.run.timing import plugins as profile_plugins

    collector = ResultCollector()  # handed to the plugin: the run's results and its one report
    captured = io.StringIO()
    freezer = FreezeCollected()
    with ProgressDisplay.for_terminal(getattr(args, "progress", "off")) as progress, \
            contextlib.redirect_stdout(sys.stdout if args.verbose else captured):
        try:
            code = pytest.main(pytest_args(args), plugins=[collector, progress, freezer, *plugins, *profile_plugins()])
        finally:
            freezer.thaw()
    if collector.config is None or code in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
        if not (quiet_usage and code == pytest.ExitCode.USAGE_ERROR):
            sys.stderr.write(captured.getvalue())
        return EXIT_USAGE if code == pytest.ExitCode.USAGE_ERROR else EXIT_INTERNAL
    report = collector.report
    print(render(report), end="")
    if args.json:
        if not Path(args.json).is_file():  # fail closed: no report, no pass
            print(f"transformer-conformance: the JSON report {args.json} was not written", file=sys.stderr)
            return EXIT_INTERNAL
        print(f"JSON report written to {args.json}")
    write_renderings(args, report)
    unobserved = [d for d in report.get("declared_deviations", []) if not d["observed"]]
    if getattr(args, "strict", False) and unobserved:
        return EXIT_FAILED  # a declared deviation the suite does not see: the declaration is wrong
    return exit_code(code, collector.results)


def write_renderings(args, report: dict) -> None:
    """--html, --junit, --markdown, --badge: rendered from the run's report."""
    from conformance.reports import formats

    for written in formats.write(report, formats.requested(args)):
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
