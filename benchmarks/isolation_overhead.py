"""What isolation costs: ``certify IMPL --no-training --isolate`` against the same run in-process; and, with
``--shortcut``, what the cross-memory shortcut (``isolation/peer.py``) saves an isolated run.

    python benchmarks/isolation_overhead.py                        # 5 pairs, isolated against in-process
    python benchmarks/isolation_overhead.py --pairs 9 --impl reference
    python benchmarks/isolation_overhead.py --shortcut --pairs 8   # shortcut on against off, both isolated

Each run is a fresh process, the command a user types. The two commands alternate, and each ratio is taken
pair by pair, so that a machine whose speed drifts (other users on a shared machine) moves both halves of a
pair alike; the figure is the median of the pair ratios. The CPU time of each run (the command and every
process it started) is paired the same way: on a busy machine the isolation's extra CPU (the worker imports
torch too) becomes wall time, on an idle one the worker's import runs beside the grader's start. The last
line is the figure: ``isolation overhead: <ratio> (aim <= 1.15)``.

``--shortcut`` pairs ``CONFORMANCE_PEER_SHORTCUTS=1`` with ``=0``, the first of each pair alternating, and
times the wire per call with a worker of each kind, also alternating: a small call (``layer_norm`` on a
(2, 7, 32) array, as the checks make) and a large one (16 MiB in and out, over the shortcut's threshold).
Its last line: ``shortcut: on/off <ratio> of an isolated run (keep if <= 0.90)``.
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

SWITCH = "CONFORMANCE_PEER_SHORTCUTS"


def run_once(impl: str, isolate: bool, report: Path, env: dict | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the run's processes)."""
    command = [sys.executable, "-m", "conformance", "certify", impl, "--no-training", "--json", str(report),
               "--isolate" if isolate else "--no-isolate"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    verdict = json.loads(report.read_text())["verdict"] if report.exists() else None
    if done.returncode != 0 or verdict != {impl: "conformant"}:
        raise SystemExit(f"{impl} isolate={isolate}: exit {done.returncode}, verdict {verdict}\n{done.stderr[-2000:]}")
    report.unlink()
    return wall, cpu


def spread(values: list[float]) -> str:
    """min-max and the quartiles' distance, as text."""
    quartiles = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return f"min-max {min(values):.3f}-{max(values):.3f}, IQR {quartiles[2] - quartiles[0]:.3f}"


def load() -> str:
    return "/".join(f"{value:.2f}" for value in os.getloadavg())


def isolation_against_in_process(impl: str, pairs: int) -> None:
    ratios, isolated, plain, cpu_ratios = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        run_once(impl, True, report)  # warm-up: file caches, bytecode
        for pair in range(pairs):
            (a, cpu_a), (b, cpu_b) = run_once(impl, True, report), run_once(impl, False, report)
            isolated.append(a)
            plain.append(b)
            ratios.append(a / b)
            cpu_ratios.append(cpu_a / cpu_b)
            print(f"pair {pair + 1}: isolated {a:.2f} s, in-process {b:.2f} s, ratio {a / b:.3f}"
                  f" (CPU {cpu_a:.2f} s / {cpu_b:.2f} s; load {load()})", flush=True)
    print(f"median wall: isolated {statistics.median(isolated):.2f} s, in-process {statistics.median(plain):.2f} s"
          f" (min-max of ratios {min(ratios):.3f}-{max(ratios):.3f}); CPU ratio {statistics.median(cpu_ratios):.3f}")
    print(f"isolation overhead: {statistics.median(ratios):.3f} (aim <= 1.15)")


def per_call_us(shortcut: bool, small_calls: int, large_calls: int) -> tuple[float, float]:
    """(median microseconds of a small call, of a large call) to a fresh isolated ``reference``."""
    import numpy as np

    from conformance.boundary.isolation.proxy import Limits, load_isolated

    os.environ[SWITCH] = "1" if shortcut else "0"  # read when the worker starts
    candidate = load_isolated("reference", timeout_s=None, limits=Limits(), builtin=True)
    adapter = candidate.adapter
    try:
        figures = []
        for shape, calls in (((2, 7, 32), small_calls), ((8, 512, 512), large_calls)):  # 16 MiB of float64
            x = np.random.default_rng(0).standard_normal(shape)
            gamma, beta = np.ones(shape[-1]), np.zeros(shape[-1])
            adapter.layer_norm(x, gamma, beta, 1e-6)  # the first call of a kind: its blocks, its code warmed
            times = []
            for _ in range(calls):
                started = time.perf_counter()
                adapter.layer_norm(x, gamma, beta, 1e-6)
                times.append(time.perf_counter() - started)
            figures.append(statistics.median(times) * 1e6)
        return figures[0], figures[1]
    finally:
        adapter.close()
        os.environ.pop(SWITCH, None)


def shortcut_on_against_off(impl: str, pairs: int, small_calls: int, large_calls: int) -> None:
    runs: dict[bool, list[float]] = {True: [], False: []}
    cpus: dict[bool, list[float]] = {True: [], False: []}
    ratios, cpu_ratios = [], []
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        run_once(impl, True, report)  # warm-up: file caches, bytecode
        for pair in range(pairs):
            order = (True, False) if pair % 2 == 0 else (False, True)
            for shortcut in order:
                wall, cpu = run_once(impl, True, report, env={**os.environ, SWITCH: "1" if shortcut else "0"})
                runs[shortcut].append(wall)
                cpus[shortcut].append(cpu)
            on, off = runs[True][-1], runs[False][-1]
            ratios.append(on / off)
            cpu_ratios.append(cpus[True][-1] / cpus[False][-1])
            print(f"pair {pair + 1} ({'on first' if order[0] else 'off first'}): on {on:.2f} s, off {off:.2f} s,"
                  f" ratio {on / off:.3f} (CPU {cpus[True][-1]:.2f} s / {cpus[False][-1]:.2f} s; load {load()})",
                  flush=True)
    calls: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for pair in range(pairs):
        for shortcut in ((True, False) if pair % 2 == 0 else (False, True)):
            calls[shortcut].append(per_call_us(shortcut, small_calls, large_calls))
        print(f"calls {pair + 1}: small on {calls[True][-1][0]:.0f} us, off {calls[False][-1][0]:.0f} us;"
              f" 16 MiB on {calls[True][-1][1] / 1000:.1f} ms, off {calls[False][-1][1] / 1000:.1f} ms"
              f" (load {load()})", flush=True)
    print(f"certify {impl} --isolate --no-training, {pairs} pairs: median on {statistics.median(runs[True]):.2f} s"
          f" ({spread(runs[True])}), off {statistics.median(runs[False]):.2f} s ({spread(runs[False])});"
          f" pair ratios {spread(ratios)}; CPU ratio {statistics.median(cpu_ratios):.3f}")
    for index, name, unit, scale in ((0, "small call", "us", 1), (1, "16 MiB call", "ms", 1000)):
        on = [figures[index] / scale for figures in calls[True]]
        off = [figures[index] / scale for figures in calls[False]]
        print(f"{name}: median on {statistics.median(on):.1f} {unit} ({spread(on)}), off"
              f" {statistics.median(off):.1f} {unit} ({spread(off)})")
    print(f"load average at the end {load()}")
    print(f"shortcut: on/off {statistics.median(ratios):.3f} of an isolated run (keep if <= 0.90)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", default="reference")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--shortcut", action="store_true", help="the cross-memory shortcut on against off")
    parser.add_argument("--small-calls", type=int, default=2000, help="small calls timed per worker (--shortcut)")
    parser.add_argument("--large-calls", type=int, default=20, help="16 MiB calls timed per worker (--shortcut)")
    args = parser.parse_args(argv)
    print(f"machine: {os.cpu_count()} CPUs, load average {load()}", flush=True)
    if args.shortcut:
        shortcut_on_against_off(args.impl, args.pairs, args.small_calls, args.large_calls)
    else:
        isolation_against_in_process(args.impl, args.pairs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
