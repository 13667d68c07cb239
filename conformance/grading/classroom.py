"""A whole class: ``grade DIR/`` grades every submission folder, ``grade --summarise`` merges reports.

Each submission is graded by its own grader process and its own sandboxed worker, at most ``--jobs`` at a time,
all with one seed (the same inputs for everyone, recorded). What one submission does to its worker cannot reach
another's. On this machine the graders are **warm**: this process imports the suite, torch, pytest and
hypothesis once, and forks one grader per submission (``grade_in_forks``); each grader's worker forks from one
warm process of the class (``isolation/warm.py``), so neither pays the imports again. Where the kernel confines
what a worker may write (Landlock), the graders share the answers the diagnosis computes of the catalogue's known
bugs, in a folder of this run that no submission can write (``shared_answers``): the same seed asks the same
questions of every submission. With ``--scheduler`` ``transformer-conformance grade`` processes run on the
workers of a Dask cluster, one task per submission (``conformance/run/cluster.py``), and their reports come
back here. The per-submission reports land in ``--out``
(``NAME.json``, and the terminal report ``NAME.txt``), then the class summary: ``summary.csv`` (one row
per student) and ``summary.md`` (the students, the checks by pass rate, the most common diagnosed bugs).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
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
    if args.scheduler:
        reports = grade_on_cluster(folders, out, seed, args)
    else:
        reports = grade_in_forks(folders, out, seed, args)
    elapsed = time.monotonic() - started
    write_summary(reports, out)
    print(f"graded {len(reports)} submissions in {elapsed:.0f} s"
          f" ({3600 * len(reports) / max(elapsed, 1e-9):.0f} per hour); summary in {out / 'summary.md'}")
    return 0 if all("checks" in report for report in reports) else 3


def grade_arguments(folder: Path, seed: int, args) -> list[str]:
    """``grade``'s arguments for one submission of the class (``--json`` apart: where it goes is the caller's)."""
    command = ["grade", str(folder), "--one", "--seed", str(seed), "--adapter-name", args.adapter_name,
               "--timeout", str(args.timeout), "--threads", str(args.threads),
               "--worker-memory", str(args.worker_memory), "--worker-total-timeout", str(args.worker_total_timeout)]
    if args.points:
        command += ["--points", str(args.points)]
    if args.no_training:
        command.append("--no-training")
    if args.select:
        command += ["-k", args.select]
    for name in args.pass_env:
        command += ["--pass-env", name]
    for path in args.allow_read:
        command += ["--allow-read", path]
    return command


def grade_in_forks(folders: list[Path], out: Path, seed: int, args) -> list[dict]:
    """Every submission graded by a grader forked from this (pre-imported) process, ``--jobs`` at a time; the
    reports in folder order. A grader that outlives its limit (the worker's total time and 10 minutes more) is
    killed, and its submission reported as an error."""
    from conformance.boundary.isolation.warm import WarmWorkers
    from conformance.run.warmup import import_ahead

    import_ahead("conformance.grading.points", "conformance.grading.gradescope")  # once: every fork has them
    limit_s = args.worker_total_timeout + 600
    reports: dict[str, dict] = {}
    pending, running = list(folders), {}
    with WarmWorkers() as warm, shared_answers(args) as answers:
        warm.start(threads=args.threads, pass_env=tuple(args.pass_env))
        while pending or running:
            while pending and len(running) < max(1, args.jobs):
                folder = pending.pop(0)
                running[fork_grader(folder, out, seed, args, warm, answers)] = (folder, time.monotonic())
            pid, _ = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                kill_overdue(running, limit_s)
                time.sleep(0.02)
                continue
            if pid in running:
                folder, _ = running.pop(pid)
                reports[folder.name] = read_report(folder, out)
                print(progress_line(reports[folder.name], len(reports), len(folders)), flush=True)
    return [reports[folder.name] for folder in folders]


def fork_grader(folder: Path, out: Path, seed: int, args, warm, answers: str | None) -> int:
    """A grader for ``folder``, forked: its output to ``NAME.txt``, its report to ``NAME.json``; its pid."""
    from conformance.grading.submission import grade_submission

    report_path = out / f"{folder.name}.json"
    report_path.unlink(missing_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    code = 3
    try:
        with open(out / f"{folder.name}.txt", "w") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        if answers:  # the class's answers, which no submission can write (shared_answers)
            os.environ[answer_cache_variable()] = answers
        one = argparse.Namespace(**{**vars(args), "submission": str(folder), "one": True, "seed": seed,
                                    "json": str(report_path), "shared_answers": bool(answers)})
        code = grade_submission(one, warm=warm)
    except BaseException:  # noqa: BLE001 - the grader's own failure: in its output, and its report is missing
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def kill_overdue(running: dict, limit_s: float) -> None:
    for pid, (_, started) in running.items():
        if time.monotonic() - started > limit_s:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def shared_answers(args):
    """A folder for the answers the graders' diagnoses compute of the catalogue's known bugs (never of a
    submission), shared by every grader of the class; None where a worker could write to it: without Landlock
    (an older kernel), or in-process (``--no-isolate``). Removed at the end."""
    from conformance.boundary.isolation.sandbox import landlock_abi

    if not args.isolate or landlock_abi() < 1:
        yield None
        return
    folder = tempfile.mkdtemp(prefix="answers-of-the-class-")
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def answer_cache_variable() -> str:
    from conformance.diagnosis.answer_cache import CACHE_DIR_ENV

    return CACHE_DIR_ENV


def read_report(folder: Path, out: Path) -> dict:
    """One submission's report; a stand-in report naming the failure if its grader gave none."""
    try:
        return json.loads((out / f"{folder.name}.json").read_text())
    except (OSError, ValueError):
        return no_report(folder, f"the grader of {folder.name} ended without one (see {folder.name}.txt)")


def no_report(folder: Path, why: str) -> dict:
    """The stand-in report of a submission whose grader gave none: an error in the summary, with why."""
    return {"submission": {"name": folder.name, "path": str(folder)}, "error": f"no report: {why}"}


def grade_on_cluster(folders: list[Path], out: Path, seed: int, args) -> list[dict]:
    """Every submission graded by a task on the Dask cluster ``args.scheduler``; the reports, in folder order.
    The files are written here, from each task's one result: a task rerun after its worker died counts once."""
    from conformance.run.cluster import as_they_finish, run_conformance

    by_name = {folder.name: folder for folder in folders}
    cwd = os.getcwd()
    tasks = {folder.name: (grade_arguments(folder, seed, args), args.worker_total_timeout + 600, cwd,
                           [str(folder.resolve())]) for folder in folders}
    reports = {}
    for name, result in as_they_finish(args.scheduler, run_conformance, tasks):
        reports[name] = cluster_report(by_name[name], out, result)
        print(progress_line(reports[name], len(reports), len(folders)), flush=True)
    return [reports[folder.name] for folder in folders]


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
    name = report["submission"]["name"]
    grade = report.get("grade")
    outcome = f"{grade['score']:g}/{grade['max_score']:g}" if grade else report.get("error", "no report")
    return f"[{done}/{total}] {name}: {outcome}"


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
    (out / "summary.csv").write_text(render_csv(summary))
    markdown = render_markdown(summary)
    (out / "summary.md").write_text(markdown)
    print(markdown.split("\n## Checks by pass rate")[0], end="")  # the students; the rest is in summary.md
