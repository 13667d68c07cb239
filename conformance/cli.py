"""``transformer-conformance``: certify an implementation, list checks, print the adapter template.

Exit codes (also in README.md):
  0  every implemented check passed
  1  at least one check failed or errored
  2  broken invocation: bad arguments, or the implementation could not be loaded
  3  internal error of the suite (or the run was interrupted)
  5  no check ran: the implementation provides none of the parts the checks need
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from pathlib import Path

# Only the standard library at the top, here and in session: ``--help`` and ``list`` start as fast as a bare
# ``import numpy`` (issue 16; tests/test_cli_startup.py). Each command imports what it needs.
from conformance.run.session import (  # noqa: F401 - the exit codes and checks_dir are the CLI's public names too
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_NOTHING_RAN,
    EXIT_OK,
    EXIT_USAGE,
    AwaitWorker,
    checks_dir,
    load_failed,
    load_options,
    pytest_argv,
    run_checks,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="transformer-conformance", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    certify = sub.add_parser("certify", help="run every check against an implementation and print its report")
    certify.add_argument("impl", help="reference, mutant:<name>, package.module:attribute, or path/to/adapter.py")
    certify.add_argument("--json", metavar="PATH", help="also write the JSON report to PATH")
    certify.add_argument("--workers", type=int, default=1, metavar="N", help="run checks in N processes (pytest-xdist)")
    certify.add_argument("--seed", type=int, default=0, help="seed for random inputs (default 0)")
    certify.add_argument("-k", dest="keyword", metavar="EXPR", help="only checks matching EXPR (pytest -k)")
    certify.add_argument("--profile", choices=("ci", "thorough", "grade"), default="ci",
                         help="hypothesis profile (grade: examples drawn from --seed, as grade runs them)")
    certify.add_argument("--no-training", action="store_true", help="skip the training-convergence checks")
    certify.add_argument("--no-diagnosis", action="store_true",
                         help="verdicts only: do not look for the known bug behind each failure (faster)")
    certify.add_argument("--timeout", type=float, default=60.0, help="seconds one adapter call may take")
    certify.add_argument("--threads", type=int, default=1, metavar="N",
                         help="torch intra-op threads (default 1, fastest on the checks' tiny tensors; 0: torch's)")
    certify.add_argument("--strict", action="store_true",
                         help="count the suite's own conventions (advisory checks: a fully masked row) as failures")
    certify.add_argument("--deviations", metavar="FILE",
                         help="the implementation's known deviations (TOML, docs/deviations.md): reported apart")
    certify.add_argument("-v", "--verbose", action="store_true", help="also show pytest's own output")
    certify.add_argument("--progress", choices=("auto", "live", "plain", "off"), default="auto",
                         help="progress on stderr while checks run: a live line on a terminal, plain lines"
                              " otherwise or under CI (auto, the default)")
    certify.add_argument("--no-cache", action="store_true",
                         help="recompute the known bugs' answers a diagnosis compares with, instead of reading those"
                              " kept by earlier runs (in $CONFORMANCE_CACHE_DIR or ~/.cache/transformer-conformance;"
                              " CONFORMANCE_CACHE=0 does the same)")
    add_report_flags(certify)
    rendering = sub.add_parser("report", help="render a saved JSON report as HTML, JUnit XML, Markdown or a badge")
    rendering.add_argument("report", metavar="REPORT.json", help="a report written by certify --json")
    add_report_flags(rendering)
    add_isolation_arguments(certify)
    listing = sub.add_parser("list", help="list the checks with their section and claim")
    listing.add_argument("impl", nargs="?", default="reference",
                         help="the reference (default: read from the shipped index) or any implementation certify"
                              " takes (collected, as certify would)")
    template_parser = sub.add_parser("template", help="print an adapter template to copy and fill")
    template_parser.add_argument(
        "--from", dest="source", metavar="MODULE:CLASS",
        help="draft an adapter for this nn.Module encoder-decoder (name map proposed from its parameters)")
    sub.add_parser("fixtures", help="verify the golden facts and print how many are encoded, verified and used")
    add_grade_parser(sub)
    kill = sub.add_parser("mutants", help="run the suite over every mutant: the kill matrix, kill rate and survivors")
    kill.add_argument("--workers", type=int, default=1, metavar="N", help="run in N processes (pytest-xdist)")
    kill.add_argument("--training", action="store_true", help="all training checks for all mutants (slow)")
    kill.add_argument("--json", metavar="PATH", help="write the per-check results of every mutant to PATH")
    add_scheduler_argument(kill, "one task per mutant (instead of --workers)")
    return parser


def add_scheduler_argument(parser, what: str) -> None:
    from conformance.run.cluster import (
        scheduler_address,  # the standard library alone: Dask only when it runs
    )

    parser.add_argument("--scheduler", metavar="ADDRESS", type=scheduler_address,
                        help=f"run on a Dask cluster, {what}: a scheduler's address (tcp://HOST:PORT) or local:N"
                             " (a local cluster of N worker processes); needs the [cluster] extra")


def add_grade_parser(sub) -> None:
    grade = sub.add_parser(
        "grade", help="grade a submission (isolated, fresh seed, points, Gradescope), a class folder, or summarise",
        description="grade SUBMISSION: one submission folder or .py file. grade DIR: every submission folder in"
                    " DIR (a class). grade --summarise REPORT...: the class summary of JSON reports."
                    " grade --init-gradescope DIR: the files of a Gradescope autograder.")
    grade.add_argument("submission", nargs="?", help="a submission folder or .py file, or a folder of submissions")
    grade.add_argument("--points", metavar="TOML", help="points per check or section (default: 1 point per check)")
    grade.add_argument("--gradescope", metavar="PATH", help="write Gradescope's results.json to PATH")
    grade.add_argument("--json", metavar="PATH", help="write the JSON report (with the score) to PATH")
    grade.add_argument("--adapter-name", default="adapter.py", metavar="FILE",
                       help="the adapter's file name in a submission folder (default adapter.py)")
    grade.add_argument("--seed", type=int, default=None, help="seed of the inputs (default: drawn, and recorded)")
    grade.add_argument("--one", action="store_true", help="SUBMISSION is one submission, even with subfolders")
    grade.add_argument("--jobs", type=int, default=2, metavar="N", help="a class: submissions graded at a time")
    grade.add_argument("--out", metavar="DIR", help="a class or --summarise: where reports and the summary go")
    add_scheduler_argument(grade, "a class: one task per submission (instead of --jobs)")
    grade.add_argument("--summarise", nargs="+", metavar="REPORT", help="summarise JSON reports (files or folders)")
    grade.add_argument("--init-gradescope", metavar="DIR", help="write setup.sh, run_autograder, points.toml to DIR")
    grade.add_argument("--training", action="store_true", help="with --init-gradescope: run the training checks")
    grade.add_argument("-k", dest="keyword", metavar="EXPR", help="only checks matching EXPR")
    grade.add_argument("--no-training", action="store_true", help="skip the training-convergence checks")
    grade.add_argument("--timeout", type=float, default=60.0, help="seconds one adapter call may take")
    grade.add_argument("--threads", type=int, default=1, metavar="N", help="torch intra-op threads (default 1)")
    add_isolation_arguments(grade, default=True)


def grade(args) -> int:
    from conformance.grading.classroom import grade_class, is_class_folder, summarise
    from conformance.grading.gradescope_setup import init_gradescope
    from conformance.grading.points import Points, PointsError
    from conformance.grading.submission import grade_submission

    if args.init_gradescope:
        for path in init_gradescope(args.init_gradescope, adapter_name=args.adapter_name, points=args.points,
                                    training=args.training):
            print(f"wrote {path}")
        return EXIT_OK
    if args.summarise:
        return summarise(args)
    if not args.submission:
        print("transformer-conformance grade: give a SUBMISSION, --summarise or --init-gradescope", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.points:
            Points.from_toml(args.points)  # a broken points file is the instructor's to fix, before any grading
    except PointsError as exc:
        print(f"transformer-conformance: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not args.one and not args.gradescope and is_class_folder(Path(args.submission), args.adapter_name):
        return on_cluster_or_usage(grade_class, args)
    if args.scheduler:
        print("transformer-conformance grade: --scheduler grades a class (a folder of submission folders);"
              f" {args.submission} is one submission. Fix: drop --scheduler, or give the class folder",
              file=sys.stderr)
        return EXIT_USAGE
    return grade_submission(args)


def on_cluster_or_usage(command, args) -> int:
    """``command(args)``; a cluster that cannot be used (Dask missing, no scheduler there) is a usage error."""
    from conformance.run.cluster import ClusterError

    try:
        return command(args)
    except ClusterError as exc:
        print(f"transformer-conformance: {exc}", file=sys.stderr)
        return EXIT_USAGE


def add_isolation_arguments(parser, *, default: bool | None = None) -> None:
    # Limits' defaults and --pass-env's check, without the proxy
    from conformance.boundary.isolation import WORKER_MEMORY_MIB, WORKER_TOTAL_S, existing_folder, variable_set_here

    group = parser.add_mutually_exclusive_group()
    group.add_argument("--isolate", dest="isolate", action="store_const", const=True, default=default,
                       help="run the implementation in a sandboxed worker process (default for a path to a .py file)")
    group.add_argument("--no-isolate", dest="isolate", action="store_const", const=False,
                       help="run it in this process (default for built-ins and module:attribute)")
    parser.add_argument("--worker-memory", type=int, default=WORKER_MEMORY_MIB, metavar="MIB",
                        help=f"address-space limit of the isolated worker (default {WORKER_MEMORY_MIB})")
    parser.add_argument("--worker-total-timeout", type=float, default=WORKER_TOTAL_S, metavar="S",
                        help="wall-clock seconds the isolated implementation may use in all"
                             f" (default {WORKER_TOTAL_S:g})")
    parser.add_argument("--pass-env", action="append", default=[], metavar="NAME", type=variable_set_here,
                        help="give the isolated worker this variable of this environment, with its value (repeatable;"
                             " the worker's environment is otherwise minimal). Passing a secret to a submission"
                             " hands it to its author")
    parser.add_argument("--allow-read", action="append", default=[], metavar="PATH", type=existing_folder,
                        help="let the isolated worker read PATH and what is beneath it (repeatable; it reads only"
                             " its own folder, Python and its packages, and its temporary folder otherwise)")


def add_report_flags(parser) -> None:
    from conformance.reports import (
        add_flags,  # the flags alone: formats.py imports every renderer
    )

    add_flags(parser)


def certify(args) -> int:
    from conformance.boundary.isolation.supervisor import stop_all_workers
    from conformance.boundary.loading import discard_preloaded, load, preload
    from conformance.errors import LoadError

    if args.deviations:
        from conformance.judging import deviations

        try:
            deviations.load(args.deviations)
        except LoadError as exc:
            print(f"transformer-conformance: {exc}", file=sys.stderr)
            return EXIT_USAGE
    try:  # fail fast, with the fix, before pytest starts; an isolated worker imports while pytest starts
        candidate = load(args.impl, **load_options(args), wait=False)
    except LoadError as exc:
        return load_failed(args, str(exc))
    preload(args.impl, candidate)  # the plugin's load gets it: one worker (one import) per run
    try:
        code = run_checks(args, plugins=[AwaitWorker(candidate, on_failure="exit")], quiet_usage=True)
        error = getattr(candidate.adapter, "reason", None)  # UnloadableAdapter: the worker could not load it
        return load_failed(args, error) if error else code
    finally:
        discard_preloaded()
        stop_all_workers()


def render_report(args) -> int:
    """``report REPORT.json [--html ...]``: every rendering of a saved report; with no flag, the terminal's."""
    from conformance.reports import formats, view
    from conformance.reports.terminal import render

    try:
        report = view.load(args.report)
    except view.ReportError as exc:
        print(f"transformer-conformance report: {exc}", file=sys.stderr)
        return EXIT_USAGE
    paths = formats.requested(args)
    if not paths:
        print(render(report), end="")
    for written in formats.write(report, paths):
        print(written.line())
    return EXIT_OK


def list_checks(args) -> int:
    """The checks' node ids: the reference's from the shipped index (no pytest, hypothesis or torch), any
    other implementation's by collecting them with it loaded (what it supersedes depends on its parts)."""
    from conformance.run import listing

    if args.impl == listing.INDEXED_IMPL:
        return listing.print_index()
    import pytest

    return int(pytest.main(pytest_argv([args.impl], "--collect-only", "-q")))


def template(args) -> int:
    import conformance.implementations

    if getattr(args, "source", None):
        return template_from(args.source)
    print((Path(conformance.implementations.__file__).parent / "template.py").read_text(), end="")
    return EXIT_OK


def template_from(source: str) -> int:
    """The adapter draft for an nn.Module class (conformance.adapters.draft); exit 2 with the fix if it cannot."""
    from conformance.adapters.draft import draft

    try:
        text = draft(source)
    except ImportError as exc:
        print(f"template --from {source}: cannot import it ({exc}). Fix: run from the folder that contains the"
              " module, or give its file: path/to/file.py:Class", file=sys.stderr)
        return EXIT_USAGE
    except (ValueError, AttributeError, TypeError) as exc:
        print(f"template --from {source}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(text, end="")
    return EXIT_OK


def fixtures(args) -> int:
    from conformance.run.coverage import fixture_summary

    summary = fixture_summary(used=facts_read_by_checks("reference"))
    v = summary["verifier"]
    print(f"published facts encoded:        {summary['encoded']} (reproducible: {summary['reproducible']})")
    print(
        f"verified against the formulas:  {v['verified']} values, {v['relation verified']} relations among"
        f" trained-model numbers, {v['erratum confirmed']} errata confirmed; {v['not reproducible']} not reproducible"
    )
    print(
        f"used by at least one check:     {summary['used_by_checks']}"
        f" ({summary['reproducible_used_by_checks']} of the reproducible; read by the checks certifying the"
        " reference without training)"
    )
    for fact_id in summary["failed"]:
        print(f"FAILED: {fact_id}")
    return EXIT_FAILED if summary["failed"] else EXIT_OK


def facts_read_by_checks(impl: str) -> set[str]:
    """Every fact id a check read (``published.value``) while certifying ``impl``, whatever its status."""
    import json
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        args = build_parser().parse_args(["certify", impl, "--no-training", "--json", str(report),
                                           "--progress", "off"])
        with contextlib.redirect_stdout(io.StringIO()):
            certify(args)
        checks = json.loads(report.read_text())["checks"]
    return {fact_id for check in checks for fact_id in check["facts"]}


def kill_matrix(args) -> int:
    from conformance.run.killmatrix import run

    return on_cluster_or_usage(lambda args: EXIT_OK if run(args) else EXIT_FAILED, args)


def run() -> None:
    """The console script: ``main``, then exit with its code at once, so that nothing an implementation
    registered (an ``atexit`` handler calling ``os._exit(0)``) can replace the verdict's exit status."""
    code = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    profile = os.environ.get("CONFORMANCE_PROFILE")
    if profile:  # opt-in: where the run's time goes, written to that path (conformance/run/timing.py)
        from conformance.run.timing import profiled

        return profiled(profile, run_command, argv)
    return run_command(argv)


def run_command(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    commands = {
        "certify": certify,
        "list": list_checks,
        "template": template,
        "fixtures": fixtures,
        "mutants": kill_matrix,
        "grade": grade,
        "report": render_report,
    }
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
