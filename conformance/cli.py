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

# Only the standard library at the top, here, in session and in options: ``--help`` and ``list`` start as fast as
# a bare ``import numpy`` (tests/test_cli_startup.py). Each command imports what it needs.
from conformance.run import options
from conformance.run.session import (  # noqa: F401 - the exit codes and checks_dir are the CLI's public names too
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_NOTHING_RAN,
    EXIT_OK,
    EXIT_USAGE,
    checks_dir,
    pytest_argv,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="transformer-conformance", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    certify = sub.add_parser("certify", help="run every check against an implementation and print its report")
    certify.add_argument("impl", help="reference, mutant:<name>, package.module:attribute, path/to/adapter.py, or"
                                      " path/to/notebook.ipynb (its cells run in a kernel; a cell defines `adapter`)")
    certify.add_argument("--adapter", dest="notebook_adapter", metavar="FILE.py",
                         help="with a notebook: a Python file run after its cells, in their namespace, that defines"
                              " `adapter` (an instructor's mapping of the lesson's class names)")
    options.add_arguments(certify, *options.CERTIFY)
    add_report_flags(certify)
    rendering = sub.add_parser("report", help="render a saved JSON report as HTML, JUnit XML, Markdown or a badge")
    rendering.add_argument("report", metavar="REPORT.json", help="a report written by certify --json")
    add_report_flags(rendering)
    options.add_arguments(certify, *options.ISOLATION)
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
    add_watch_parser(sub)
    kill = sub.add_parser("mutants", help="run the suite over every mutant: the kill matrix, kill rate and survivors")
    options.add_arguments(kill, "workers", workers={"help": "run in N processes (pytest-xdist)"})
    kill.add_argument("--training", action="store_true", help="all training checks for all mutants (slow)")
    options.add_arguments(kill, "dtype", dtype={
        "help": "float16 or bfloat16: the half-precision kill matrix (the mutants with a table for that dtype,"
                " certified in it)"})
    options.add_arguments(kill, "json", json={"help": "write the per-check results of every mutant to PATH"})
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
    options.add_arguments(grade, "json", json={"help": "write the JSON report (with the score) to PATH"})
    grade.add_argument("--adapter-name", default="adapter.py", metavar="FILE",
                       help="the adapter's file name in a submission folder (default adapter.py)")
    grade.add_argument("--adapter", dest="notebook_adapter", metavar="FILE.py", type=absolute_file,
                       help="notebooks: a Python file run after each submission's notebook cells, in their namespace,"
                            " that defines `adapter` (the instructor's mapping of the lesson's class names)")
    options.add_arguments(grade, "seed", seed={"default": None,  # drawn per grading
                                               "help": "seed of the inputs (default: drawn, and recorded)"})
    grade.add_argument("--one", action="store_true", help="SUBMISSION is one submission, even with subfolders")
    grade.add_argument("--jobs", type=int, default=2, metavar="N", help="a class: submissions graded at a time")
    grade.add_argument("--out", metavar="DIR", help="a class or --summarise: where reports and the summary go")
    grade.add_argument("--resume", action="store_true",
                       help="a class: keep the finished reports in --out of the same suite version, seed and options"
                            " (without --seed: the seed of those reports) and grade only the rest")
    add_scheduler_argument(grade, "a class: one task per submission (instead of --jobs)")
    grade.add_argument("--summarise", nargs="+", metavar="REPORT", help="summarise JSON reports (files or folders)")
    grade.add_argument("--init-gradescope", metavar="DIR", help="write setup.sh, run_autograder, points.toml to DIR")
    grade.add_argument("--training", action="store_true", help="with --init-gradescope: run the training checks")
    options.add_arguments(grade, "select", "no_training", "timeout", "threads", "dtype", *options.ISOLATION,
                          select={"help": "only checks matching EXPR"},
                          dtype={"help": "grade in this dtype (float16 or bfloat16: the submissions' half path, with"
                                         " its tolerances); without it a submission that declares a half dtype is"
                                         " not graded in it"},
                          threads={"help": "torch intra-op threads (default 1)"},
                          isolate={"default": True})  # a submission runs isolated


def absolute_file(text: str) -> str:
    """A file the grader reads (an instructor's adapter file): its absolute path, which every grader process reads."""
    path = Path(text)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"no file {text!r}")
    return str(path.resolve())


def add_watch_parser(sub) -> None:
    watch = sub.add_parser(
        "watch", help="rerun the checks on every save of the adapter: the failing ones first",
        description="watch IMPL: certify IMPL now and again on every save of its files (the .py files of its"
                    " folder), in a fresh isolated worker each time; the checks that failed last time run first."
                    " Ctrl-C stops it.")
    watch.add_argument("impl", help="path/to/adapter.py, or package.module:attribute")
    options.add_arguments(watch, "select", "seed", "no_diagnosis", "timeout", "threads", "strict", "deviations",
                          "no_cache", *options.ISOLATION)
    watch.add_argument("--training", dest="no_training", action="store_false",
                       help="also run the training-convergence checks (left out by default: minutes, not seconds)")


def watch(args) -> int:
    from conformance.boundary.loading import is_builtin
    from conformance.run.watch import watch as watch_files

    if is_builtin(args.impl):
        print(f"transformer-conformance watch: {args.impl} is built in: none of its files is yours to save. Fix: give"
              " your adapter's file (watch my_adapter.py), or certify it", file=sys.stderr)
        return EXIT_USAGE
    return watch_files(args)


def grade(args, plugins=()) -> int:
    from conformance.grading.classroom import grade_class, is_class_folder, summarise
    from conformance.grading.gradescope_setup import GradescopeSetupError, init_gradescope
    from conformance.grading.points import Points, PointsError
    from conformance.grading.submission import grade_submission

    if args.init_gradescope:
        try:
            written = init_gradescope(args.init_gradescope, adapter_name=args.adapter_name, points=args.points,
                                      training=args.training, notebook_adapter=args.notebook_adapter)
        except GradescopeSetupError as exc:
            print(f"transformer-conformance grade --init-gradescope: {exc}", file=sys.stderr)
            return EXIT_USAGE
        for path in written:
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
    if args.resume:
        print(f"transformer-conformance grade: --resume resumes a class (a folder of submission folders);"
              f" {args.submission} is one submission. Fix: drop --resume, or give the class folder", file=sys.stderr)
        return EXIT_USAGE
    if args.scheduler:
        print("transformer-conformance grade: --scheduler grades a class (a folder of submission folders);"
              f" {args.submission} is one submission. Fix: drop --scheduler, or give the class folder",
              file=sys.stderr)
        return EXIT_USAGE
    return grade_submission(args, plugins)


def on_cluster_or_usage(command, args) -> int:
    """``command(args)``; a cluster that cannot be used (Dask missing, no scheduler there) or a class that cannot be
    resumed is a usage error."""
    from conformance.grading.classroom import ResumeError
    from conformance.run.cluster import ClusterError

    try:
        return command(args)
    except (ClusterError, ResumeError) as exc:
        print(f"transformer-conformance: {exc}", file=sys.stderr)
        return EXIT_USAGE


def add_report_flags(parser) -> None:
    from conformance.reports import (
        add_flags,  # the flags alone: formats.py imports every renderer
    )

    add_flags(parser)


def certify(args, plugins=()) -> int:
    """Load the implementation (exit 2 with the fix if it cannot be), then run the checks on it: its report. The
    Python API's run (``conformance.api.execute``), printed."""
    from conformance.api import execute
    from conformance.errors import LoadError
    from conformance.reports import formats

    impl = args.impl
    if getattr(args, "notebook_adapter", None):
        if not impl.endswith(".ipynb"):
            print(f"transformer-conformance: --adapter goes with a notebook (NOTEBOOK.ipynb), not {impl!r}",
                  file=sys.stderr)
            return EXIT_USAGE
        impl = f"{impl}+{args.notebook_adapter}"
    try:
        return execute(impl, options.Options.from_namespace(args), renderings=formats.requested(args),
                       plugins=plugins).code
    except LoadError as exc:  # the declared deviations' file
        print(f"transformer-conformance: {exc}", file=sys.stderr)
        return EXIT_USAGE


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

    from conformance.run.runs import Run

    return int(pytest.main(pytest_argv("--collect-only", "-q"), plugins=[Run([args.impl])]))


def template(args) -> int:
    import conformance.implementations

    if getattr(args, "source", None):
        return template_from(args.source)
    print((Path(conformance.implementations.__file__).parent / "template.py").read_text(), end="")
    return EXIT_OK


def cannot_import(source: str, exc: ImportError) -> str:
    """Why ``template --from`` could not import ``source``, and the fix for that cause: the module itself not found
    (run from its folder, or give its file), or a package it imports missing (install it)."""
    module = source.partition(":")[0]
    wanted = module.removesuffix(".py").replace("/", ".").split(".")[-1] if module.endswith(".py") else module
    missing = getattr(exc, "name", None)
    if isinstance(exc, ModuleNotFoundError) and missing and not (wanted == missing or wanted.startswith(missing + ".")
                                                                 or missing.startswith(wanted)):
        return (f"importing it needs {missing!r}, which is not installed here ({exc}). Fix: install it (pip install"
                f" {missing.split('.')[0]}) in the environment that runs transformer-conformance")
    return (f"cannot import it ({exc}). Fix: run from the folder that contains the module, or give its file:"
            " path/to/file.py:Class")


def template_from(source: str) -> int:
    """The adapter draft for an nn.Module class (conformance.adapters.draft), a Flax NNX class (draft_jax) or a Keras
    class (draft_keras); exit 2 with the fix if it cannot."""
    from conformance.adapters.draft import draft

    try:
        text = draft(source)
    except ImportError as exc:
        print(f"template --from {source}: {cannot_import(source, exc)}", file=sys.stderr)
        return EXIT_USAGE
    except (ValueError, AttributeError, TypeError) as exc:
        print(f"template --from {source}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(text, end="")
    return EXIT_OK


def fixtures(args) -> int:
    from conformance.run.coverage import fixture_summary

    summary = fixture_summary(checks=checks_certifying("reference"))
    v = summary["verifier"]
    print(f"published facts encoded:        {summary['encoded']} (reproducible: {summary['reproducible']})")
    print(
        f"verified against the formulas:  {v['verified']} values, {v['relation verified']} relations among"
        f" trained-model numbers, {v['erratum confirmed']} errata confirmed; {v['not reproducible']} not reproducible"
    )
    reasons = ", ".join(f"{n} {reason}" for reason, n in summary["not_asked"].items())
    unasked = sum(summary["not_asked"].values())
    print(f"asked of a candidate:           {summary['asked']} (the reproducible but {unasked} no candidate can"
          f" reproduce: {reasons}; published.toml says why)")
    print(
        f"used by at least one check:     {summary['used_by_checks']}"
        f" ({summary['asked_used_by_checks']} of the {summary['asked']} asked; read by the checks certifying the"
        " reference without training)"
    )
    print("by section (read / asked):")
    width = max(len(row["section"]) for row in summary["by_section"])
    for row in summary["by_section"]:
        print(f"  {row['section']:<{width}}  {row['read']}/{row['asked']}")
    for fact_id in summary["unread"]:
        print(f"NOT READ by any check: {fact_id}")
    for fact_id, ids in summary["read_twice"].items():
        print(f"READ TWICE: {fact_id} by {', '.join(ids)}")
    for fact_id in summary["failed"]:
        print(f"FAILED: {fact_id}")
    return EXIT_FAILED if summary["failed"] or summary["unread"] or summary["read_twice"] else EXIT_OK


def checks_certifying(impl: str) -> list[dict]:
    """The checks of a run certifying ``impl`` without training, as its report keeps them: each with its id, section
    and every fact it read (``published.value``), whatever its status."""
    import json
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        args = build_parser().parse_args(["certify", impl, "--no-training", "--json", str(report),
                                           "--progress", "off"])
        with contextlib.redirect_stdout(io.StringIO()):
            certify(args)
        return json.loads(report.read_text())["checks"]


def kill_matrix(args) -> int:
    from conformance.run.killmatrix import run

    return on_cluster_or_usage(lambda args: EXIT_OK if run(args) else EXIT_FAILED, args)


def run() -> None:
    """The console script: ``main``, then exit with its code at once, so that nothing an implementation
    registered (an ``atexit`` handler calling ``os._exit(0)``) can replace the verdict's exit status."""
    from conformance.reports.safe_text import never_fail_to_encode

    never_fail_to_encode(sys.stdout, sys.stderr)
    code = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    profile = os.environ.get("CONFORMANCE_PROFILE")
    if profile:  # opt-in: where the run's time goes, written to that path (conformance/run/timing.py)
        from conformance.run.timing import profiled

        return profiled(profile, lambda plugin: run_command(argv, plugins=(plugin,)))
    return run_command(argv)


def run_command(argv: list[str] | None, plugins=()) -> int:
    """The command ``argv`` names; ``plugins``: more pytest plugins for the runs of certify and grade."""
    args = build_parser().parse_args(argv)
    running = {"certify": certify, "grade": grade}
    if args.command in running:
        return running[args.command](args, plugins)
    commands = {
        "list": list_checks,
        "template": template,
        "fixtures": fixtures,
        "mutants": kill_matrix,
        "report": render_report,
        "watch": watch,
    }
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
