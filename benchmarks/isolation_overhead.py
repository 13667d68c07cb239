"""What isolation costs: ``certify reference --no-training --isolate`` against the same run in-process.

    python benchmarks/isolation_overhead.py            # 5 pairs
    python benchmarks/isolation_overhead.py --pairs 9 --impl reference

Each run is a fresh process, the command a user types. The two commands alternate (isolated, in-process,
isolated, ...), and the ratio is taken pair by pair, so that a machine whose speed drifts (other users
on a shared machine) moves both halves of a pair alike; the figure is the median of the pair ratios.
The CPU time of each run (the command and every process it started) is paired the same way: on a busy
machine the isolation's extra CPU (the worker imports torch too) becomes wall time, on an idle one the
worker's import runs beside the grader's start. The last line is the figure:
``isolation overhead: <ratio> (aim <= 1.15)``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_once(impl: str, isolate: bool, report: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the run's processes)."""
    command = [sys.executable, "-m", "conformance", "certify", impl, "--no-training", "--json", str(report),
               "--isolate" if isolate else "--no-isolate"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    verdict = json.loads(report.read_text())["verdict"] if report.exists() else None
    if done.returncode != 0 or verdict != {impl: "conformant"}:
        raise SystemExit(f"{impl} isolate={isolate}: exit {done.returncode}, verdict {verdict}\n{done.stderr[-2000:]}")
    report.unlink()
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", default="reference")
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}", flush=True)
    ratios, isolated, plain, cpu_ratios = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        run_once(args.impl, True, report)  # warm-up: file caches, bytecode
        for pair in range(args.pairs):
            (a, cpu_a), (b, cpu_b) = run_once(args.impl, True, report), run_once(args.impl, False, report)
            isolated.append(a)
            plain.append(b)
            ratios.append(a / b)
            cpu_ratios.append(cpu_a / cpu_b)
            print(f"pair {pair + 1}: isolated {a:.2f} s, in-process {b:.2f} s, ratio {a / b:.3f}"
                  f" (CPU {cpu_a:.2f} s / {cpu_b:.2f} s; load {os.getloadavg()[0]:.2f})", flush=True)
    print(f"median wall: isolated {statistics.median(isolated):.2f} s, in-process {statistics.median(plain):.2f} s"
          f" (min-max of ratios {min(ratios):.3f}-{max(ratios):.3f}); CPU ratio {statistics.median(cpu_ratios):.3f}")
    print(f"isolation overhead: {statistics.median(ratios):.3f} (aim <= 1.15)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
