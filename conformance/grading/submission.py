"""Grading one submission: find its adapter, certify it isolated with a fresh seed, score it, write reports.

``transformer-conformance grade SUBMISSION [--points points.toml] [--gradescope results.json] [--json PATH]``.
SUBMISSION is a folder (its adapter is the shallowest file named ``--adapter-name``, default
``adapter.py``) or a ``.py`` file. The run seed is drawn unless ``--seed`` is given, and recorded in the
report. A submission that cannot be loaded still gets a complete report: every check is an error
naming why, so its score is 0 of the same maximum as everyone's.
"""

from __future__ import annotations

import json
import secrets
import sys
import tempfile
import time
from pathlib import Path

from conformance.errors import LoadError

SKIPPED_FOLDERS = {".git", "__pycache__", ".venv", "venv", "node_modules", "__MACOSX"}


def find_adapter(folder: Path, name: str) -> Path:
    """The shallowest ``name`` under ``folder`` (a student's zip often adds a folder level)."""
    found = [path for path in folder.rglob(name)
             if path.is_file() and not SKIPPED_FOLDERS & set(path.relative_to(folder).parts[:-1])]
    if not found:
        raise LoadError(f"no {name} in {folder}. Fix: the submission must contain {name} (the adapter), or"
                        " name its file with --adapter-name")
    return min(found, key=lambda path: (len(path.relative_to(folder).parts), str(path)))


def draw_seed(seed: int | None) -> int:
    """The run's seed: the one given, else a fresh one (recorded in the report, so it can be replayed)."""
    return secrets.randbelow(2**31) if seed is None else seed


def grading_options(args, seed: int, report: Path):
    """The options of a grading run: the grade's own, then what every grading run has."""
    import dataclasses

    from conformance.run.options import Options

    # pass_env: only what the grader named, a submission sees no other variable of the grader's; allow_read: and
    # it reads no folder but its own, Python's and these. no_cache: no answers kept on disk: the submission runs
    # on this machine during grading, and could write entries that name a bug it does not have (or hide one). The
    # diagnosis never trusts files another process could have written meanwhile; it recomputes every answer. The
    # one exception is a class's folder that no submission can write (warm_graders.shared_answers).
    return dataclasses.replace(Options.from_namespace(args), json=str(report), seed=seed, profile="grade",
                               workers=1, verbose=False, progress="off",
                               no_cache=not getattr(args, "shared_answers", False))


def grade_submission(args, plugins=(), warm=None) -> int:
    """Grade ``args.submission``; print the report and the score; exit as ``certify`` would. ``plugins``: more
    pytest plugins for its run (the profiler's); ``warm``: the class's ``WarmWorkers`` (else the run's own)."""
    from conformance.boundary.isolation.supervisor import stop_all_workers
    from conformance.boundary.isolation.warm import WarmWorkers
    from conformance.boundary.loading import load
    from conformance.reports.safe_text import visible_text
    from conformance.run import runs
    from conformance.run.session import AwaitWorker, run_checks, unloadable_candidate

    started = time.monotonic()
    submission = Path(args.submission)
    try:
        spec = str(find_adapter(submission, args.adapter_name) if submission.is_dir() else submission)
    except LoadError as exc:
        spec, failure = str(submission / args.adapter_name), str(exc)
    else:
        failure = None
    seed = draw_seed(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        report_path = Path(args.json) if args.json else Path(tmp) / "report.json"
        report_path.unlink(missing_ok=True)  # a report found after the run is this run's, and gets its score
        options = grading_options(args, seed, report_path)
        own = submission if submission.is_dir() else submission.parent  # what it may read of its own
        run = runs.Run([spec], options, runs.limits(options, hide_suite_code=True, own_folder=str(own)),
                       plugins=list(plugins), warm=warm or WarmWorkers())
        try:
            candidate = unloadable_candidate(spec, failure) if failure else load(spec, **run.load_options(), wait=False)
        except LoadError as exc:
            candidate = unloadable_candidate(spec, str(exc))
        run.candidates[spec] = candidate
        run.plugins.append(AwaitWorker(candidate, on_failure="replace"))
        try:
            code = run_checks(run)
        finally:
            stop_all_workers()
            if warm is None:
                run.warm.close()
            # whatever failed after the checks wrote their report, the grade and results.json are written
            report = finish_report(report_path, submission, spec, args, time.monotonic() - started) \
                if report_path.is_file() else None
    if report is None:
        return code
    note = report["grade"]["confinement"]
    print(visible_text(f"score: {report['grade']['score']:g} / {report['grade']['max_score']:g}"
                       f" (seed {seed}; replay: transformer-conformance grade {args.submission} --seed {seed})"
                       + (f"; {note}" if note else "")))
    for line in look_up_lines(report["grade"]):
        print(visible_text(line))
    return code


def look_up_lines(grade: dict) -> list[str]:
    """What the grade says of answers looked up, not computed: the flagged twins, and the points withheld."""
    from conformance.grading.points import withheld_line

    lines = [f"look-up: {found['check']} matches the published values but not the formula on fresh inputs"
             f" ({', '.join(found['published']) or 'its published checks'} passed, on evidence: hard-coded?)"
             for found in grade.get("lookups") or []]
    withheld = grade.get("withheld") or {}
    if withheld:
        lines.append(withheld_line(list(withheld)))
    return lines


def finish_report(path: Path, submission: Path, spec: str, args, elapsed: float) -> dict:
    """Add the submission, its score and the points used to the JSON report; write results.json if asked."""
    from conformance.grading.gradescope import build_results
    from conformance.grading.points import Points, report_loaded, totals
    from conformance.reports.json_report import render
    from conformance.reports.safe_text import json_text
    from conformance.judging.twins import flagged_look_ups

    points = Points.from_toml(args.points) if args.points else Points()
    report = json.loads(path.read_text())
    scored = points.score_report(report)
    score, max_score = totals(scored)
    report["submission"] = {"name": submission_name(submission), "path": str(submission), "adapter": spec}
    note = confinement(report)
    report["grade"] = {"score": score, "max_score": max_score, "points": points.source,
                       "loaded": report_loaded(report), "reads_confined": not note, "confinement": note,
                       "lookups": flagged_look_ups(report["checks"]),
                       "withheld": {s.id: s.withheld for s in scored if s.withheld}}
    path.write_text(render(report))
    if args.gradescope:
        results = build_results(report, points, execution_time=elapsed)
        Path(args.gradescope).write_text(json_text(results, indent=2) + "\n")
        print(f"Gradescope results written to {args.gradescope}", file=sys.stderr)
    return report


def confinement(report: dict) -> str:
    """"" when the kernel kept the submission from reading outside its folder (Landlock), else the mark its grade
    carries, saying why ("reads not confined: ..."): it could have read a classmate's work or a solution."""
    from conformance.boundary.isolation.sandbox import READS_ABI, landlock_abi

    isolation = (report.get("implementations") or [{}])[0].get("isolation") or {}
    if not isolation.get("isolated"):
        return "reads not confined: graded in this process (--no-isolate), with the grader's access to every file"
    confined = isolation.get("reads_confined")
    if confined is None:  # not loaded: the worker's hello, which says what applied, never came; the kernel's say
        confined = isolation.get("limits", {}).get("landlock", True) and landlock_abi() >= READS_ABI
    if confined:
        return ""
    return ("reads not confined: this kernel has no Landlock (Linux 5.13+, ABI 1) and bubblewrap is absent, so the"
            " submission could read any file the grader can (a classmate's work, a solution); install bubblewrap"
            " (the package bubblewrap), or grade on a kernel with Landlock")


def submission_name(submission: Path) -> str:
    return submission.stem if submission.suffix == ".py" else submission.resolve().name
