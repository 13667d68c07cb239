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
per student) and ``summary.md`` (the students, the checks by pass rate, the most common diagnosed bugs), of this run's
reports only (``run_record``: a report names its run and says whether it is complete). Stopped by SIGINT or
SIGTERM, the class marks what it did not finish incomplete (0 points); ``--resume`` keeps the complete reports of
the same run and grades the rest.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import sys
import time
from pathlib import Path

from conformance.errors import LoadError
from conformance.grading.run_record import read_report
from conformance.grading.submission import NOTEBOOK, SKIPPED_FOLDERS, draw_seed, files_named, find_notebook


def is_class_folder(path: Path, adapter_name: str) -> bool:
    """A folder of submissions: it has no adapter of its own, and its subfolders have one (an adapter file or a
    notebook), or it holds notebooks (one per student)."""
    if not path.is_dir() or (path / adapter_name).is_file():
        return False
    return any(sub.suffix == NOTEBOOK or files_named(sub, adapter_name) or has_notebook(sub)
               for sub in submission_folders(path))


def has_notebook(folder: Path) -> bool:
    try:
        return find_notebook(folder) is not None
    except LoadError:  # several: a notebook submission all the same, whose grade says which to name
        return True


def submission_folders(path: Path) -> list[Path]:
    """The class's submissions: its folders and notebooks, but hidden ones, the tools' (``SKIPPED_FOLDERS``) and
    links (a link to a classmate's folder would grade that folder twice, under another name)."""
    return sorted(sub for sub in path.iterdir() if not skipped_because(sub)
                  and (sub.is_dir() or sub.suffix == NOTEBOOK and sub.is_file()))


def skipped_because(sub: Path) -> str:
    """Why an entry of a class folder is not a submission ("" when it may be one)."""
    if sub.is_symlink():
        return "a link"
    if sub.name.startswith("."):
        return "hidden"
    if sub.suffix == NOTEBOOK and not sub.is_dir() and not sub.is_file():
        return "not a regular file"
    return "a tool's folder" if sub.name in SKIPPED_FOLDERS else ""


def say_skipped(root: Path) -> None:
    """Name the folders and notebooks of the class that are not graded, and why: a student's submission is never
    left out unsaid."""
    from conformance.reports.safe_text import one_line

    skipped = [f"{sub.name} ({skipped_because(sub)})" for sub in sorted(root.iterdir())
               if skipped_because(sub) and (sub.is_dir() or sub.suffix == NOTEBOOK)]
    if skipped:
        print(one_line(f"not graded: {', '.join(skipped)}"), flush=True)


NAME_BYTES = 200  # of a folder's name kept in its report's file name (a file name holds 255 bytes)


def report_file(folder: Path, suffix: str) -> str:
    """The name of a submission's report (``NAME.json``) or output (``NAME.txt``) in ``--out``: its folder's name,
    or, for a name too long for a file's or holding a control character, its first ``NAME_BYTES`` bytes as visible
    text and a digest of the whole (one student's name never stops the class, nor writes a file name that does)."""
    from conformance.reports.safe_text import one_line

    name, shown = folder.name, one_line(folder.name)  # a name with a newline or an escape code: shown, digested
    if shown == name and len(name.encode()) + len(suffix) <= 255:
        return name + suffix
    digest = hashlib.sha256(name.encode(errors="surrogateescape")).hexdigest()[:12]
    return shown.encode()[:NAME_BYTES].decode(errors="ignore") + f"-{digest}{suffix}"


class ResumeError(ValueError):
    """``--resume`` cannot tell which run to resume; the message says why and the fix."""


def grade_class(args) -> int:
    """Grade every submission folder of ``args.submission``; write the reports and the summary. With
    ``args.resume``, the finished reports of the same run are kept and only the others graded. Stopped by SIGINT
    or SIGTERM, the submissions not finished get incomplete reports (0 points), the summary says so, and the exit
    code is 128 + the signal's number."""
    from conformance.grading.interrupts import interrupts
    from conformance.grading.run_record import run_identity
    from conformance.run import janitor

    root = Path(args.submission)
    out = Path(args.out) if args.out else root.resolve().parent / f"{root.resolve().name}-grades"
    out.mkdir(parents=True, exist_ok=True)
    folders = submission_folders(root)
    say_skipped(root)
    seed = resumed_seed(args.seed, folders, out) if args.resume else draw_seed(args.seed)
    identity = run_identity(args, seed)
    to_grade = regraded(folders, out, identity) if args.resume else folders
    remove_summary(out)  # from here on, no summary of an earlier run sits beside this run's reports
    janitor.start()
    started = time.monotonic()
    where = f"on the Dask cluster {args.scheduler}" if args.scheduler else f"{args.jobs} at a time"
    print(f"grading {len(to_grade)} submissions of {root} ({where}, seed {seed}) into {out}", flush=True)
    begun: set[str] = set()  # the submissions whose grading began
    with interrupts() as stop:
        try:
            if args.scheduler:
                grade_on_cluster(to_grade, out, identity, args, begun)
            else:
                grade_in_forks(to_grade, out, identity, args, begun)
        except KeyboardInterrupt:
            if not stop:
                raise
            mark_unfinished(to_grade, out, identity, begun, stop.name)
        finally:  # the summary is always written, whatever stopped the run: a missing report is an incomplete row
            reports = [read_class_report(folder, out) for folder in folders]
            write_summary(reports, out, identity, others=other_runs_in(out, folders, identity))
    elapsed = time.monotonic() - started
    if stop:
        print(f"stopped by {stop.name} after {elapsed:.0f} s: the submissions not finished are marked incomplete"
              f" (0 points). Grade the rest: transformer-conformance grade {root} --out {out} --resume")
        return stop.exit_code
    print(f"graded {len(to_grade)} submissions in {elapsed:.0f} s"
          f" ({3600 * len(to_grade) / max(elapsed, 1e-9):.0f} per hour); summary in {out / 'summary.md'}")
    return 0 if all(report.get("complete") is True for report in reports) else 3


# -- resuming ------------------------------------------------------------------------------------------
def resumed_seed(seed: int | None, folders: list[Path], out: Path) -> int:
    """The seed of a resumed class: the one given, else the one the class's reports in ``out`` were graded with
    (a fresh one if there are none); reports of several seeds and no ``--seed`` is a ``ResumeError``."""
    if seed is not None:
        return seed
    seeds: dict[int, list[str]] = {}
    for folder in folders:
        report = read_report(out / report_file(folder, ".json")) or {}
        run = report.get("run")
        if isinstance(run, dict) and "seed" in run:
            seeds.setdefault(run["seed"], []).append(folder.name)
    if len(seeds) > 1:
        found = "; ".join(f"seed {seed}: {', '.join(names)}" for seed, names in sorted(seeds.items()))
        raise ResumeError(f"--resume: expected the reports in {out} to share one seed, got {len(seeds)} ({found})."
                          " Likely cause: runs with different seeds wrote to the same --out. Fix: give --seed SEED"
                          " (the reports of other seeds are graded again)")
    return next(iter(seeds), None) if seeds else draw_seed(None)


def regraded(folders: list[Path], out: Path, identity: dict) -> list[Path]:
    """The folders ``--resume`` grades again: all but those with a complete report of this run. Says how many it
    keeps and why it grades each of the others."""
    from conformance.grading.run_record import differences, incomplete_reason, is_complete

    again, why = [], []
    for folder in folders:
        report = read_report(out / report_file(folder, ".json"))
        if report is None:
            reason = "no report"
        elif not is_complete(report):
            reason = f"incomplete: {incomplete_reason(report)}"
        else:
            reason = differences(report.get("run"), identity)
        if reason:
            again.append(folder)
            why.append(f"{folder.name} ({reason})")
    print(f"--resume: kept {len(folders) - len(again)} finished reports of this run (suite"
          f" {identity['suite_version']}, seed {identity['seed']}, the same options) in {out}", flush=True)
    if why:
        print(f"--resume: grading {len(again)} again: " + "; ".join(why), flush=True)
    return again


def remove_summary(out: Path) -> None:
    for name in ("summary.csv", "summary.md"):
        (out / name).unlink(missing_ok=True)


# -- grading -------------------------------------------------------------------------------------------
def grade_in_forks(folders: list[Path], out: Path, identity: dict, args, begun: set[str]) -> None:
    """Every submission graded by a grader forked from this (pre-imported) process, ``--jobs`` at a time, each
    writing its report. A grader that outlives its limit (the worker's total time and 10 minutes more) is killed,
    and its submission reported incomplete; so is one that ends without a finished report. Interrupted (a
    ``KeyboardInterrupt``), the running graders are stopped (they mark their reports incomplete) before it goes on."""
    from conformance.boundary.isolation.warm import WarmWorkers
    from conformance.grading.interrupts import held_back
    from conformance.grading.warm_graders import fork_grader, import_graders, kill_overdue, shared_answers

    import_graders()  # once: every fork has them
    limit_s = args.worker_total_timeout + 600
    pending, running, done = list(folders), {}, 0
    with WarmWorkers() as warm, shared_answers(args.isolate) as answers:
        warm.start(threads=args.threads, pass_env=tuple(args.pass_env))
        try:
            while pending or running:
                while pending and len(running) < max(1, args.jobs):
                    folder = pending.pop(0)
                    with held_back():  # a signal now would lose track of the grader being forked
                        try:
                            (out / report_file(folder, ".json")).unlink(missing_ok=True)
                            pid = fork_grader(folder, out / report_file(folder, ".json"),
                                              out / report_file(folder, ".txt"), identity["seed"], args, warm,
                                              answers, die_with_parent=True)
                        except OSError as exc:  # no grader for this one (no process, no file): its error alone
                            report = incomplete(folder, out, identity, None, f"its grader could not be started: {exc}")
                            done += 1
                            print(progress_line(report, done, len(folders)), flush=True)
                            continue
                        running[pid] = (folder, time.monotonic())
                        begun.add(folder.name)
                pid, status = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    kill_overdue(running, limit_s)
                    time.sleep(0.02)
                    continue
                if pid in running:
                    folder, _ = running.pop(pid)
                    report = finished_report(folder, out, identity, ended(status))
                    done += 1
                    print(progress_line(report, done, len(folders)), flush=True)
        finally:
            stop_graders(running)


def ended(status: int) -> str:
    code = os.waitstatus_to_exitcode(status)
    return f"killed by {signal.Signals(-code).name}" if code < 0 else f"exited with status {code}"


def stop_graders(running: dict, grace_s: float = 30.0) -> None:
    """SIGTERM to each grader of ``running``: it stops its checks and marks its report incomplete; SIGKILL to those
    still there after ``grace_s``. Every one reaped."""
    for pid in running:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while running and time.monotonic() < deadline:
        pid, _ = os.waitpid(-1, os.WNOHANG)
        if pid:
            running.pop(pid, None)
        else:
            time.sleep(0.05)
    for pid in list(running):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        running.pop(pid)


def finished_report(folder: Path, out: Path, identity: dict, how: str) -> dict:
    """The report of a submission whose grader ended (``how``): its own if it finished it, else one that says
    incomplete (0 points) and why."""
    from conformance.grading.run_record import is_complete

    report = read_report(out / report_file(folder, ".json"))
    if report is not None and (is_complete(report) or marked_by_its_grader(report, identity)):
        return report
    output = report_file(folder, ".txt")
    return incomplete(folder, out, identity, report,
                      f"the grader of {folder.name} {how} before finishing its report (see {output})")


def mark_unfinished(folders: list[Path], out: Path, identity: dict, begun: set[str], signal_name: str) -> None:
    """After an interrupt: every folder without a complete report of this run gets one that says incomplete (a
    grader stopped in time marked its own; kept, with what it had judged)."""
    from conformance.grading.run_record import is_complete

    for folder in folders:
        report = read_report(out / report_file(folder, ".json"))
        if report is not None and report.get("run") == identity and is_complete(report):
            continue
        if folder.name in begun:
            if report is not None and marked_by_its_grader(report, identity):
                continue
            incomplete(folder, out, identity, report, f"interrupted by {signal_name} while it was graded")
        else:
            incomplete(folder, out, identity, None,
                       f"not graded: the class's grading was interrupted by {signal_name} before its turn")


def marked_by_its_grader(report: dict, identity: dict) -> bool:
    """Whether ``report`` was marked incomplete by its own grader in this run (stopped by a signal): its reason
    (what was judged, by which signal) is the better account."""
    return report.get("complete") is False and report.get("run") == identity


def incomplete(folder: Path, out: Path, identity: dict, report: dict | None, reason: str) -> dict:
    """``report`` (or a stand-in, if there is none) marked incomplete with ``reason``, written as NAME.json."""
    from conformance.grading.run_record import mark_incomplete, stand_in_report, write_report

    if report is None or report.get("schema") != "transformer-conformance/report":
        report = stand_in_report(folder.name, str(folder), identity, reason)
    report.setdefault("submission", {"name": folder.name, "path": str(folder)})
    write_report(out / report_file(folder, ".json"), mark_incomplete(report, identity, reason))
    return report


def read_class_report(folder: Path, out: Path) -> dict:
    return read_report(out / report_file(folder, ".json")) or {"submission": {"name": folder.name, "path": str(folder)},
                                                        "complete": False, "incomplete": "no report"}


def grade_on_cluster(folders: list[Path], out: Path, identity: dict, args, begun: set[str]) -> None:
    """Every submission graded by a task on the Dask cluster ``args.scheduler``. The files are written here, from
    each task's one result: a task rerun after its worker died counts once."""
    from conformance.grading.warm_graders import grade_on_worker
    from conformance.run.cluster import as_they_finish

    by_name = {folder.name: folder for folder in folders}
    cwd = os.getcwd()
    tasks = {folder.name: (str(folder.resolve()), identity["seed"], args, cwd) for folder in folders}
    begun.update(by_name)  # queued on the cluster at once
    for done, (name, result) in enumerate(as_they_finish(args.scheduler, grade_on_worker, tasks), 1):
        try:
            report = cluster_report(by_name[name], out, identity, result)
        except (OSError, ValueError, KeyError, TypeError) as exc:  # its result unreadable: its error, not the class's
            report = incomplete(by_name[name], out, identity, None,
                                f"its task's result could not be read: {type(exc).__name__}: {exc}")
        print(progress_line(report, done, len(folders)), flush=True)


def cluster_report(folder: Path, out: Path, identity: dict, result) -> dict:
    """Write one task's report and output as the local pool would (``NAME.json``, ``NAME.txt``); its report."""
    from conformance.grading.run_record import is_complete, write_atomically
    from conformance.run.cluster import task_failure

    report_path, log_path = out / report_file(folder, ".json"), out / report_file(folder, ".txt")
    report_path.unlink(missing_ok=True)
    if isinstance(result, BaseException):
        why = f"the task that graded {folder.name} failed: {task_failure(result)}"
        log_path.write_text(why + "\n")
        return incomplete(folder, out, identity, None, why)
    log_path.write_text(result["output"].replace(result["report_path"], str(report_path)))
    report = json.loads(result["report"]) if result["report"] else None
    if report is None or not is_complete(report):
        output = report_file(folder, ".txt")
        return incomplete(folder, out, identity, report, f"the grader of {folder.name} on {result['host']} ended"
                                                         f" before finishing its report (see {output})")
    write_atomically(report_path, result["report"])
    return report


def progress_line(report: dict, done: int, total: int) -> str:
    """``[3/20] ada: 41/95``; the name and any reason as visible text (they are the submission's)."""
    from conformance.reports.safe_text import one_line, visible_text

    name = one_line((report.get("submission") or {}).get("name", "?"))
    grade = report.get("grade")
    try:
        if report.get("complete") is not True:
            outcome = f"incomplete, 0 points: {report.get('incomplete', 'no report')}"
        else:
            outcome = f"{grade['score']:g}/{grade['max_score']:g}"
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
    """``grade --summarise REPORT...``: the class summary of per-submission JSON reports, of one run only (the run
    most of them share); the others are named in a warning, not mixed in."""
    reports = read_reports(args.summarise)
    if not reports:
        print("transformer-conformance: no JSON reports found in " + " ".join(args.summarise), file=sys.stderr)
        return 2
    identity, chosen, others = one_run(reports)
    write_summary(chosen, Path(args.out or "class-summary"), identity, others=others)
    return 0


def one_run(reports: list[dict]) -> tuple[dict | None, list[dict], list[tuple[str, str]]]:
    """The run most ``reports`` share (ties: the one with the latest report), its reports, and the others as
    (name, how its run differs)."""
    from conformance.grading.run_record import differences

    runs: dict[str, list[dict]] = {}
    for report in reports:
        runs.setdefault(json.dumps(report.get("run"), sort_keys=True), []).append(report)
    chosen = max(runs.values(), key=lambda group: (len(group), max(str(r.get("created", "")) for r in group)))
    identity = chosen[0].get("run")
    others = [(report["submission"].get("name", "?"), differences(report.get("run"), identity))
              for report in reports if report.get("run") != identity]
    return identity, chosen, others


def other_runs_in(out: Path, folders: list[Path], identity: dict) -> list[tuple[str, str]]:
    """The reports in ``out`` of no submission of the class, graded in another run: (name, how it differs)."""
    from conformance.grading.run_record import differences

    names = {Path(report_file(folder, '.json')).stem for folder in folders}
    others = []
    for file in sorted(out.glob("*.json")):
        report = read_report(file)
        if file.stem in names or not report or report.get("schema") != "transformer-conformance/report":
            continue
        if report.get("run") != identity:
            others.append((file.stem, differences(report.get("run"), identity)))
    return others


def write_summary(reports: list[dict], out: Path, identity: dict | None, others=()) -> None:
    """summary.csv and summary.md of ``reports`` (all of the run ``identity``), each written whole or not at all;
    the students' table printed, then the incomplete submissions and the reports of ``others`` runs left out."""
    from conformance.grading.class_summary import build_summary, render_csv, render_markdown
    from conformance.grading.run_record import write_atomically

    out.mkdir(parents=True, exist_ok=True)
    summary = build_summary(reports)
    write_atomically(out / "summary.csv", render_csv(summary))
    markdown = render_markdown(summary)
    notes = run_notes(summary, identity, others)
    write_atomically(out / "summary.md", markdown + ("\n" + notes if notes else ""))
    print(markdown.split("\n## Checks by pass rate")[0], end="")  # the students; the rest is in summary.md
    if notes:
        print("\n" + notes, end="", file=sys.stderr if others else sys.stdout)


def run_notes(summary: dict, identity: dict | None, others) -> str:
    """What the summary's table does not say: the run it is of, which rows are incomplete and why, and the reports
    of other runs left out of it."""
    lines = []
    if identity:
        lines.append(f"Run: suite {identity.get('suite_version')}, seed {identity.get('seed')}.")
    incomplete = [row for row in summary["students"] if row.get("incomplete")]
    if incomplete:
        lines += ["", f"## Incomplete ({len(incomplete)}: 0 points each, grade them again with --resume)", ""]
        lines += [f"- {row['student']}: {row['incomplete']}" for row in incomplete]
    if others:
        lines += ["", f"## Not in this summary ({len(others)} reports of another run, not mixed in)", ""]
        lines += [f"- warning: {name}: {why}" for name, why in others]
    return "\n".join(lines) + "\n" if lines else ""
