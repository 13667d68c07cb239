"""A whole class: ``grade DIR/`` grades every submission folder, ``grade --summarise`` merges reports.

Each submission is graded by its own ``transformer-conformance grade`` process (its own grader, its own
worker), at most ``--jobs`` at a time, all with one seed (the same inputs for everyone, recorded). What
one submission does to its worker cannot reach another's. The per-submission reports land in ``--out``
(``NAME.json``, and the terminal report ``NAME.txt``), then the class summary: ``summary.csv`` (one row
per student) and ``summary.md`` (the students, the checks by pass rate, the most common diagnosed bugs).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
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
    print(f"grading {len(folders)} submissions of {root} ({args.jobs} at a time, seed {seed}) into {out}")
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        reports = list(pool.map(lambda folder: grade_in_subprocess(folder, out, seed, args), folders))
    elapsed = time.monotonic() - started
    write_summary(reports, out)
    print(f"graded {len(reports)} submissions in {elapsed:.0f} s"
          f" ({3600 * len(reports) / max(elapsed, 1e-9):.0f} per hour); summary in {out / 'summary.md'}")
    return 0 if all("checks" in report for report in reports) else 3


def grade_command(folder: Path, out: Path, seed: int, args) -> list[str]:
    command = [sys.executable, "-m", "conformance", "grade", str(folder), "--one", "--seed", str(seed),
               "--json", str(out / f"{folder.name}.json"), "--adapter-name", args.adapter_name,
               "--timeout", str(args.timeout), "--threads", str(args.threads),
               "--worker-memory", str(args.worker_memory), "--worker-total-timeout", str(args.worker_total_timeout)]
    if args.points:
        command += ["--points", str(args.points)]
    if args.no_training:
        command.append("--no-training")
    if args.keyword:
        command += ["-k", args.keyword]
    for name in args.pass_env:
        command += ["--pass-env", name]
    for path in args.allow_read:
        command += ["--allow-read", path]
    return command


def grade_in_subprocess(folder: Path, out: Path, seed: int, args) -> dict:
    """One submission's report; a stand-in report naming the failure if its grader gave none."""
    report_path = out / f"{folder.name}.json"
    report_path.unlink(missing_ok=True)
    with open(out / f"{folder.name}.txt", "w") as log:
        try:
            subprocess.run(grade_command(folder, out, seed, args), stdout=log, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, timeout=args.worker_total_timeout + 600)
        except subprocess.TimeoutExpired:
            pass
    try:
        return json.loads(report_path.read_text())
    except (OSError, ValueError):
        return {"submission": {"name": folder.name, "path": str(folder)},
                "error": f"no report: the grader of {folder.name} ended without one (see {folder.name}.txt)"}


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
    from conformance.reports.class_summary import build_summary, render_csv, render_markdown

    out.mkdir(parents=True, exist_ok=True)
    summary = build_summary(reports)
    (out / "summary.csv").write_text(render_csv(summary))
    markdown = render_markdown(summary)
    (out / "summary.md").write_text(markdown)
    print(markdown.split("\n## Checks by pass rate")[0], end="")  # the students; the rest is in summary.md
