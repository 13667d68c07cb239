"""How long the check catalogue takes without training: the figure issue 4 asks for ("a few seconds").

    python benchmarks/catalogue.py                       # reference, numpy, a failing mutant; 1 and 2 threads
    python benchmarks/catalogue.py --impl reference --repeat 5 --threads 1

Each run is a fresh process, ``transformer-conformance certify IMPL --no-training --json``, exactly what a
user types, so the figure includes start-up, collection and the report. Per run it prints the wall time,
the checks and their statuses, the time inside checks, and the slowest checks; the last lines give the
median wall time per implementation and thread count. ``--threads`` sets OMP_NUM_THREADS (torch's
intra-op threads) and passes ``--threads`` (the suite's default is 1): the catalogue's tensors are
tiny, so a second thread mostly waits on the first, and on a busy machine on other processes too.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_IMPLS = ("reference", "numpy", "mutant:attention_no_scaling")


def run_once(impl: str, threads: int, workdir: Path) -> dict:
    report = workdir / "report.json"
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "CONFORMANCE_PROGRESS": "0"}
    command = [sys.executable, "-m", "conformance", "certify", impl, "--no-training", "--json", str(report),
               "--threads", str(threads)]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if not report.exists():
        raise SystemExit(f"{impl}: no report (exit {done.returncode})\n{done.stderr[-2000:]}")
    data = json.loads(report.read_text())
    checks = data["checks"]
    slowest = sorted(checks, key=lambda c: c["duration_s"] or 0.0, reverse=True)[:3]
    return {
        "wall_s": wall,
        "exit": done.returncode,
        "checks": len(checks),
        "summary": data["summary"][impl],
        "in_checks_s": sum(c["duration_s"] or 0.0 for c in checks),
        "slowest": [(c["id"], c["duration_s"]) for c in slowest],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", action="append", help=f"implementation(s) to time (default: {DEFAULT_IMPLS})")
    parser.add_argument("--threads", type=int, action="append", help="OMP_NUM_THREADS values (default: 1 and 2)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per implementation and thread count")
    args = parser.parse_args(argv)
    impls, thread_counts = args.impl or list(DEFAULT_IMPLS), args.threads or [1, 2]
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}", flush=True)
    medians = {}
    with tempfile.TemporaryDirectory() as tmp:
        for impl in impls:
            for threads in thread_counts:
                walls = []
                for i in range(args.repeat):
                    r = run_once(impl, threads, Path(tmp))
                    walls.append(r["wall_s"])
                    counts = ", ".join(f"{n} {status}" for status, n in r["summary"].items() if n)
                    slow = ", ".join(f"{cid} {s:.2f} s" for cid, s in r["slowest"])
                    print(f"{impl:<28} threads {threads}  run {i + 1}: {r['wall_s']:5.1f} s wall,"
                          f" {r['in_checks_s']:5.1f} s in {r['checks']} checks ({counts}); slowest: {slow}",
                          flush=True)
                medians[impl, threads] = statistics.median(walls)
    print()
    for (impl, threads), wall in medians.items():
        print(f"catalogue without training, {impl}, {threads} thread(s): median {wall:.1f} s wall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
