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
import json
import sys
from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL, EXIT_NOTHING_RAN = 0, 1, 2, 3, 5


def checks_dir() -> Path:
    import conformance.checks

    return Path(conformance.checks.__file__).parent


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="transformer-conformance", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    certify = sub.add_parser("certify", help="run every check against an implementation and print its report")
    certify.add_argument("impl", help="reference, mutant:<name>, package.module:attribute, or path/to/adapter.py")
    certify.add_argument("--json", metavar="PATH", help="also write the JSON report to PATH")
    certify.add_argument("--workers", type=int, default=1, metavar="N", help="run checks in N processes (pytest-xdist)")
    certify.add_argument("--seed", type=int, default=0, help="seed for random inputs (default 0)")
    certify.add_argument("-k", dest="keyword", metavar="EXPR", help="only checks matching EXPR (pytest -k)")
    certify.add_argument("--profile", choices=("ci", "thorough"), default="ci", help="hypothesis profile")
    certify.add_argument("--no-training", action="store_true", help="skip the training-convergence checks")
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
    add_report_flags(certify)
    rendering = sub.add_parser("report", help="render a saved JSON report as HTML, JUnit XML, Markdown or a badge")
    rendering.add_argument("report", metavar="REPORT.json", help="a report written by certify --json")
    add_report_flags(rendering)
    listing = sub.add_parser("list", help="list the checks with their section and claim")
    listing.add_argument("impl", nargs="?", default="reference")
    template_parser = sub.add_parser("template", help="print an adapter template to copy and fill")
    template_parser.add_argument(
        "--from", dest="source", metavar="MODULE:CLASS",
        help="draft an adapter for this nn.Module encoder-decoder (name map proposed from its parameters)")
    sub.add_parser("fixtures", help="verify the golden facts and print how many are encoded, verified and used")
    kill = sub.add_parser("mutants", help="run the suite over every mutant: the kill matrix, kill rate and survivors")
    kill.add_argument("--workers", type=int, default=1, metavar="N", help="run in N processes (pytest-xdist)")
    kill.add_argument("--training", action="store_true", help="all training checks for all mutants (slow)")
    kill.add_argument("--json", metavar="PATH", help="write the per-check results of every mutant to PATH")
    return parser


def add_report_flags(parser) -> None:
    from conformance.reports.formats import add_flags

    add_flags(parser)


def pytest_args(args) -> list[str]:
    argv = [
        str(checks_dir()),
        "--impl",
        args.impl,
        "--conformance-seed",
        str(args.seed),
        "--conformance-profile",
        args.profile,
        "--check-timeout",
        str(args.timeout),
        "--conformance-threads",
        str(getattr(args, "threads", 1)),
        "-p",
        "no:cacheprovider",
        "--import-mode=importlib",
        "-o",
        "addopts=",
        "--rootdir",
        str(checks_dir()),
        "-c",
        str(checks_dir() / "pytest.ini"),
    ]
    if args.json:
        argv += ["--conformance-json", args.json]
    if args.keyword:
        argv += ["--conformance-select", args.keyword]  # pytest's own -k would also match the implementation's name
    if args.no_training:
        argv.append("--no-training")
    if getattr(args, "strict", False):
        argv.append("--conformance-strict")
    if getattr(args, "deviations", None):
        argv += ["--conformance-deviations", args.deviations]
    if args.workers > 1:
        argv += ["-n", str(args.workers), "--dist", "loadfile"]
    return argv + (["-v"] if args.verbose else ["-q", "--tb=no", "--no-header"])


def certify(args) -> int:
    import pytest

    from conformance.errors import LoadError
    from conformance.loading import load
    from conformance.reports.terminal import render

    try:
        load(args.impl)  # fail fast, with the fix, before pytest starts
    except LoadError as exc:
        print(f"transformer-conformance: cannot load {args.impl!r}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.deviations:
        from conformance import deviations

        try:
            deviations.load(args.deviations)
        except LoadError as exc:
            print(f"transformer-conformance: {exc}", file=sys.stderr)
            return EXIT_USAGE
    from conformance.plugin import COLLECTORS
    from conformance.reports.progress import ProgressDisplay

    COLLECTORS.clear()
    captured = io.StringIO()
    with ProgressDisplay.for_terminal(getattr(args, "progress", "off")) as progress, \
            contextlib.redirect_stdout(sys.stdout if args.verbose else captured):
        code = pytest.main(pytest_args(args), plugins=[progress])
    collector = _collector()
    if collector is None or code in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
        sys.stderr.write(captured.getvalue())
        return EXIT_USAGE if code == pytest.ExitCode.USAGE_ERROR else EXIT_INTERNAL
    metadata = collector.metadata()
    print(render(collector.results, metadata), end="")
    if args.json:
        print(f"JSON report written to {args.json}")
    write_renderings(args, collector)
    unobserved = [d for d in metadata["declared_deviations"] if not d["observed"]]
    if args.strict and unobserved:
        return EXIT_FAILED  # a declared deviation the suite does not see: the declaration is wrong
    return exit_code(code, collector.results)


def write_renderings(args, collector) -> None:
    """--html, --junit, --markdown, --badge: rendered from the JSON report just written (or built)."""
    from conformance.reports import formats, view
    from conformance.reports.json_report import build_report

    paths = formats.requested(args)
    if not paths:
        return
    report = view.load(args.json) if args.json else build_report(collector.results, collector.metadata())
    for written in formats.write(report, paths):
        print(written.line())


def render_report(args) -> int:
    """``report REPORT.json [--html ...]``: every rendering of a saved report; with no flag, the terminal's."""
    from conformance.reports import formats, view
    from conformance.reports.terminal import render
    from conformance.results import CheckResult

    try:
        report = view.load(args.report)
    except view.ReportError as exc:
        print(f"transformer-conformance report: {exc}", file=sys.stderr)
        return EXIT_USAGE
    paths = formats.requested(args)
    if not paths:
        print(render([CheckResult.from_dict(c) for c in report["checks"]], report), end="")
    for written in formats.write(report, paths):
        print(written.line())
    return EXIT_OK


def _collector():
    from conformance.plugin import COLLECTORS

    return COLLECTORS[-1] if COLLECTORS else None


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


def list_checks(args) -> int:
    import pytest

    return int(
        pytest.main(
            [
                str(checks_dir()),
                "--impl",
                args.impl,
                "--collect-only",
                "-q",
                "-p",
                "no:cacheprovider",
                "--import-mode=importlib",
                "--rootdir",
                str(checks_dir()),
                "-c",
                str(checks_dir() / "pytest.ini"),
            ]
        )
    )


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
    from conformance.coverage import fixture_summary

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
    """Every mutant through the suite (pytest sessions with every mutant as an --impl): print the kill
    matrix; exit 1 if a mutant survives or a declared catch does not happen."""
    import json
    import time

    from conformance.killmatrix import WITHOUT_CONVERGENCE, catalogue, render, tabulate

    started = time.perf_counter()
    rows = catalogue()
    results = []
    if args.training:
        results += _mutant_session(args, [row.name for row in rows], [])
    else:
        results += _mutant_session(args, [row.name for row in rows if not row.training], ["--no-training"])
        training = [row.name for row in rows if row.training]
        if training:
            results += _mutant_session(args, training, ["-k", WITHOUT_CONVERGENCE])
    rows = tabulate(rows, results)
    checks = list(dict.fromkeys(result.id for result in results))
    print(render(rows, checks), end="")
    print(f"wall time: {time.perf_counter() - started:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "mutants": [{"name": r.name, "bug": r.bug, "training": r.training, "declared": sorted(r.expected),
                         "caught": sorted(r.caught), "ran": sorted(r.ran)} for r in rows],
            "results": [result.as_dict() for result in results],
        }, indent=1, default=str))
    return EXIT_OK if all(row.killed and not row.missed for row in rows) else EXIT_FAILED


def _mutant_session(args, names: list[str], extra: list[str]) -> list:
    """The results of one pytest session that certifies every mutant of ``names``."""
    import pytest

    from conformance.plugin import COLLECTORS

    argv = [
        str(checks_dir()),
        "-p",
        "no:cacheprovider",
        "--import-mode=importlib",
        "-o",
        "addopts=",
        "--rootdir",
        str(checks_dir()),
        "-c",
        str(checks_dir() / "pytest.ini"),
        "-q",
        "--tb=no",
        "--no-header",
        *extra,
    ]
    for name in names:
        argv += ["--impl", f"mutant:{name}"]
    if args.workers > 1:
        argv += ["-n", str(args.workers), "--dist", "loadfile"]
    COLLECTORS.clear()
    with contextlib.redirect_stdout(io.StringIO()):
        pytest.main(argv)
    if not COLLECTORS:
        raise RuntimeError("the kill-matrix session collected no results")
    return list(COLLECTORS[-1].results)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    commands = {
        "certify": certify,
        "list": list_checks,
        "template": template,
        "fixtures": fixtures,
        "mutants": kill_matrix,
        "report": render_report,
    }
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
