"""Submissions graded per hour: ``grade DIR --jobs 2 --no-training`` over a class of 20 submissions.

    python benchmarks/class_throughput.py                  # 5 copies of the reference, 15 mutants
    python benchmarks/class_throughput.py --students 40 --jobs 2
    python benchmarks/class_throughput.py --students 6 --scheduler local:2   # on a local Dask cluster
    python benchmarks/class_throughput.py --students 4 --references 2 --training   # with the training checks

Each submission is what a student who copied the suite's code would hand in: the built-in implementations
copied into the submission folder as a package of its own (``suite_copy``, imports rewritten), and an
``adapter.py`` that picks the reference or one forward mutant. (A submission may not import the suite's
implementations: the worker cannot read them.) The class is graded exactly as an instructor would,
one grader process per submission, ``--jobs`` at a time (or one task per submission on the Dask cluster of
``--scheduler``). The last line is the figure:
``submissions per hour: <n> (aim >= 800 without training)``.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import conformance.implementations as implementations


def make_submission(folder: Path, module: str) -> None:
    """``folder/adapter.py`` importing ``suite_copy.<module>``, with the implementations copied beside it."""
    copy = folder / "suite_copy"
    shutil.copytree(Path(implementations.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for path in copy.rglob("*.py"):
        path.write_text(path.read_text().replace("conformance.implementations", "suite_copy"))
    (folder / "adapter.py").write_text(f"from suite_copy.{module} import adapter  # noqa: F401\n")


def build_class(root: Path, students: int, references: int) -> None:
    from conformance.run.killmatrix import catalogue

    mutants = [row.name for row in catalogue() if not row.training]
    for i in range(students):
        module = "reference.adapter" if i < references else f"mutants.{mutants[(i - references) % len(mutants)]}"
        make_submission(root / f"student{i:02d}", module)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--references", type=int, default=5, help="how many of them copy the reference")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--scheduler", metavar="ADDRESS", help="grade on this Dask cluster (tcp://HOST:PORT, local:N)")
    parser.add_argument("--training", action="store_true", help="with the training checks (minutes a submission)")
    args = parser.parse_args(argv)
    pool = ["--scheduler", args.scheduler] if args.scheduler else ["--jobs", str(args.jobs)]
    where = f"--scheduler {args.scheduler}" if args.scheduler else f"--jobs {args.jobs}"
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        root, out = Path(tmp) / "class", Path(tmp) / "grades"
        build_class(root, args.students, args.references)
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "conformance", "grade", str(root), "--out", str(out),
                               *pool, *([] if args.training else ["--no-training"]), "--seed", "0"],
                              capture_output=True, text=True)
        wall = time.perf_counter() - started
        rows = list(csv.DictReader((out / "summary.csv").open())) if (out / "summary.csv").exists() else []
        if done.returncode != 0 or len(rows) != args.students:
            raise SystemExit(f"grade exited {done.returncode} with {len(rows)} rows\n{done.stdout[-3000:]}"
                             f"\n{done.stderr[-2000:]}")
        for row in rows:
            print(f"  {row['student']}: {float(row['score']):g}/{float(row['max_score']):g} {row['verdict']:<15}"
                  f" {row['most_likely_bug']}")
        conformant = sum(row["verdict"] == "conformant" for row in rows)
        training = "with" if args.training else "without"
        print(f"{args.students} submissions ({conformant} conformant) graded {training} training in {wall:.0f} s"
              f" with {where}")
    print(f"submissions per hour: {3600 * args.students / wall:.0f}"
          + ("" if args.training else " (aim >= 800 without training)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
