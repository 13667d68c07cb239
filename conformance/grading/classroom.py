"""A whole class: ``grade DIR/`` grades every submission folder, ``grade --summarise`` merges reports.

Each submission is graded by its own grader process and its own sandboxed worker, at most ``--jobs`` at a time,
all with one seed (the same inputs for everyone, recorded). What one submission does to its worker cannot reach
another's. The graders are **warm** (``warm_graders.py``): on this machine this process imports the suite, torch,
pytest and hypothesis once and forks one grader per submission (``grade_in_forks``); on a Dask cluster
(``--scheduler``, ``conformance/run/cluster.py``) each worker keeps a grading server that does the same, one task
per submission, and the reports come back here. Each grader's worker forks from one warm process
(``isolation/warm.py``), so neither pays the imports again; where the kernel confines what a worker may write
(Landlock), the graders of one process share the answers the diagnosis computes of the catalogue's known bugs:
the same seed asks the same questions of every submission. The per-submission reports land in ``--out``
(``NAME.json``, and the terminal report ``NAME.txt``), then the class summary: ``summary.csv`` (one row
per student) and ``summary.md`` (the students, the checks by pass rate, the most common diagnosed bugs).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from conformance.grading.submission import SKIPPED_FOLDERS, draw_seed


def is_class_folder(path: Path, adapter_name: str) -> bool:
    """A folder of submission folders: it has no adapter of its own, its subfolders have."""
    if not path.is_dir() or (path / adapter_name).is_file():
        return False
    return any(sub.is_dir() and next(sub.rglob(adapter_name), None) for sub in submission_folders(path))


def submission_folders(path: Path) -> list[Path]:
    return sorted(sub for sub in path.iterdir()
                  if sub.is_dir() and not sub.name.startswith(".") and sub.name not in SKIPPED_FOLDERS)


def grade_class(args) -> int:
    """Grade every submission folder of ``args.submission``; write the reports and the summary."""
    root = Path(args.submission)
    out = Path(args.out) if args.out else root.resolve().parent / f"{root.resolve().name}-grades"
    out.mkdir(parents=True, exist_ok=True)
    seed = draw_seed(args.seed)
    folders = submission_folders(root)
    started = time.monotonic()
    where = f"on the Dask cluster {args.scheduler}" if args.scheduler else f"{args.jobs} at a time"
    print(f"grading {len(folders)} submissions of {root} ({where}, seed {seed}) into {out}", flush=True)
    finished: dict[str, dict] = {}  # by folder name, as each grader ends: what the summary has if the run stops
    try:
        if args.scheduler:
            grade_on_cluster(folders, out, seed, args, finished)
        else:
            grade_in_forks(folders, out, seed, args, finished)
    finally:  # the summary is always written: of every submission, graded or not
        reports = [finished.get(folder.name) or no_report(folder, "not graded: the class's run stopped first")
                   for folder in folders]
        write_summary(reports, out)
    elapsed = time.monotonic() - started
    print(f"graded {len(reports)} submissions in {elapsed:.0f} s"
          f" ({3600 * len(reports) / max(elapsed, 1e-9):.0f} per hour); summary in {out / 'summary.md'}")
    return 0 if all("checks" in report for report in reports) else 3


def grade_in_forks(folders: list[Path], out: Path, seed: int, args, reports: dict[str, dict]) -> None:
    """Every submission graded by a grader forked from this (pre-imported) process, ``--jobs`` at a time; each
    report into ``reports`` (by folder name) as its grader ends. A grader that outlives its limit (the worker's
    total time and 10 minutes more) is killed, and its submission reported as an error; so is one whose grader
    could not be started or whose report cannot be read."""
    from conformance.boundary.isolation.warm import WarmWorkers
    from conformance.grading.warm_graders import fork_grader, import_graders, kill_overdue, shared_answers

    import_graders()  # once: every fork has them
    limit_s = args.worker_total_timeout + 600
    pending, running = list(folders), {}
    with WarmWorkers() as warm, shared_answers(args.isolate) as answers:
        warm.start(threads=args.threads, pass_env=tuple(args.pass_env))
        while pending or running:
            while pending and len(running) < max(1, args.jobs):
                folder = pending.pop(0)
                try:
                    (out / f"{folder.name}.json").unlink(missing_ok=True)
                    pid = fork_grader(folder, out / f"{folder.name}.json", out / f"{folder.name}.txt", seed, args,
                                      warm, answers)
                except OSError as exc:  # no grader for this one (no process, no file): its error, the class goes on
                    finish(reports, folder, no_report(folder, f"its grader could not be started: {exc}"), len(folders))
                    continue
                running[pid] = (folder, time.monotonic())
            pid, _ = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                kill_overdue(running, limit_s)
                time.sleep(0.02)
                continue
            if pid in running:
                folder, _ = running.pop(pid)
                finish(reports, folder, read_report(folder, out), len(folders))


def finish(reports: dict[str, dict], folder: Path, report: dict, total: int) -> None:
    """Record one submission's report and say so; nothing in the report can stop the class."""
    reports[folder.name] = report
    print(progress_line(report, len(reports), total), flush=True)


def read_report(folder: Path, out: Path) -> dict:
    """One submission's report; a stand-in report naming the failure if its grader gave none, or one that is not a
    report (a grader that crashed halfway)."""
    try:
        report = json.loads((out / f"{folder.name}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return no_report(folder, f"the grader of {folder.name} ended without one (see {folder.name}.txt)")
    if not isinstance(report, dict):
        return no_report(folder, f"the grader of {folder.name} wrote no report but a {type(report).__name__}")
    report.setdefault("submission", {"name": folder.name, "path": str(folder)})
    return report


def no_report(folder: Path, why: str) -> dict:
    """The stand-in report of a submission whose grader gave none: an error in the summary, with why."""
    return {"submission": {"name": folder.name, "path": str(folder)}, "error": f"no report: {why}"}


def grade_on_cluster(folders: list[Path], out: Path, seed: int, args, reports: dict[str, dict]) -> None:
    """Every submission graded by a task on the Dask cluster ``args.scheduler``; each report into ``reports`` (by
    folder name). The files are written here, from each task's one result: a task rerun after its worker died
    counts once."""
    from conformance.grading.warm_graders import grade_on_worker
    from conformance.run.cluster import as_they_finish

    by_name = {folder.name: folder for folder in folders}
    cwd = os.getcwd()
    tasks = {folder.name: (str(folder.resolve()), seed, args, cwd) for folder in folders}
    for name, result in as_they_finish(args.scheduler, grade_on_worker, tasks):
        try:
            report = cluster_report(by_name[name], out, result)
        except (OSError, ValueError, KeyError, TypeError) as exc:  # its result unreadable: its error, not the class's
            report = no_report(by_name[name], f"its task's result could not be read: {type(exc).__name__}: {exc}")
        finish(reports, by_name[name], report, len(folders))


def cluster_report(folder: Path, out: Path, result) -> dict:
    """Write one task's report and output as the local pool would (``NAME.json``, ``NAME.txt``); its report."""
    from conformance.run.cluster import task_failure

    report_path, log_path = out / f"{folder.name}.json", out / f"{folder.name}.txt"
    report_path.unlink(missing_ok=True)
    if isinstance(result, BaseException):
        why = f"the task that graded {folder.name} failed: {task_failure(result)}"
        log_path.write_text(why + "\n")
        return no_report(folder, why)
    log_path.write_text(result["output"].replace(result["report_path"], str(report_path)))
    if result["report"] is None:
        return no_report(folder, f"the grader of {folder.name} on {result['host']} ended without one"
                                 f" (see {folder.name}.txt)")
    report_path.write_text(result["report"])
    return json.loads(result["report"])


def progress_line(report: dict, done: int, total: int) -> str:
    """``[3/20] ada: 41/95``; the name and any error as visible text (they are the submission's)."""
    from conformance.reports.safe_text import visible_text

    name = (report.get("submission") or {}).get("name", "?")
    grade = report.get("grade")
    try:
        outcome = f"{grade['score']:g}/{grade['max_score']:g}" if grade else report.get("error", "no report")
    except (KeyError, TypeError, ValueError):
        outcome = "a report without a readable score"
    return visible_text(f"[{done}/{total}] {name}: {outcome}")


def read_reports(paths: list[str]) -> list[dict]:
    """Every JSON report under ``paths`` (files, or folders searched for ``*.json``)."""
    files: list[Path] = []
    for text in paths:
        path = Path(text)
        files += sorted(path.rglob("*.json")) if path.is_dir() else [path]
    reports = []
    for file in files:
        try:
            report = json.loads(file.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(report, dict) and report.get("schema") == "transformer-conformance/report":
            report.setdefault("submission", {"name": file.stem, "path": str(file)})
            reports.append(report)
    return reports


def summarise(args) -> int:
    """``grade --summarise REPORT...``: the class summary of per-submission JSON reports."""
    reports = read_reports(args.summarise)
    if not reports:
        print("transformer-conformance: no JSON reports found in " + " ".join(args.summarise), file=sys.stderr)
        return 2
    write_summary(reports, Path(args.out or "class-summary"))
    return 0


def write_summary(reports: list[dict], out: Path) -> None:
    from conformance.grading.class_summary import build_summary, render_csv, render_markdown

    out.mkdir(parents=True, exist_ok=True)
    summary = build_summary(reports)
    (out / "summary.csv").write_text(render_csv(summary), encoding="utf-8")
    markdown = render_markdown(summary)
    (out / "summary.md").write_text(markdown, encoding="utf-8")
    print(markdown.split("\n## Checks by pass rate")[0], end="")  # the students; the rest is in summary.md
