"""Where the check catalogue's time goes without training, against the floor a user cannot avoid.

    python benchmarks/catalogue.py                            # reference, numpy, a failing mutant; 5 rounds
    python benchmarks/catalogue.py --impl reference --impl mutant:pre_norm --repeat 3

Each run is a fresh process, the command a user types: ``transformer-conformance certify IMPL --no-training``
(the console script next to this interpreter), so the figure includes the interpreter's start, the imports,
collection and the report. Beside them, a bare ``python -c "import torch"``: every run of a torch model pays it.
Within a round the commands run in turn (torch, impl1, impl2, ..., then torch again), and each ratio is taken
within its round, so that a machine whose speed drifts (the other users of a shared machine) moves a command
and its floor alike; the figures are medians over rounds, with each run's peak memory (RSS, ``os.wait4``).

Before the rounds, one run per implementation with ``CONFORMANCE_PROFILE`` set (``conformance/run/timing.py``)
says where its time goes: the interpreter's start (until the CLI's ``main``), the imports, collection, the
checks' own time (property checks apart), the candidate's calls, the oracle's, the diagnosis and the report,
each moment counted once; then the checks that cost the most, with their shares. These runs also warm the
file caches; their wall time (instrumentation included) is printed beside the plain runs' median.

The last line holds the ratios: each implementation against the bare import of torch, and each other
implementation against the reference's run of the same round.

The catalogue's answers kept on disk (``conformance.diagnosis.answer_cache``) go to a folder of this benchmark
alone, never the user's cache: ``--cache warm`` (the default) keeps them from run to run, as for a student who
reruns certify after an edit (one run per implementation fills it before the profiled runs); ``--cache cold``
empties the folder before every certify run, as the first run after installing or changing the suite;
``--cache off`` sets CONFORMANCE_CACHE=0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from startup import cli_command  # the console script a user types (benchmarks/startup.py)

DEFAULT_IMPLS = ("reference", "numpy", "mutant:attention_no_scaling")
TORCH = 'python -c "import torch"'
PHASE_LABELS = {
    "start": "interpreter start, until main",
    "imports": "imports (torch, pytest, hypothesis, ...)",
    "loading": "loading the implementation",
    "collection": "collection",
    "hypothesis_checks": "property (hypothesis) checks, own time",
    "plain_checks": "plain checks, own time",
    "candidate_calls": "candidate calls",
    "oracle_calls": "oracle calls (float64 reference, formulas)",
    "diagnosis": "diagnosis",
    "report": "report",
    "other": "other (arguments, pytest start-up, session)",
    "exit": "exit, after main",
}


CACHE_COLD = "BENCHMARK_CACHE_COLD"  # in env: measure() empties the answer cache before the run


def measure(command: list[str], env: dict) -> dict:
    """One fresh process: wall seconds, exit code, peak RSS (MiB) of that process alone, its stderr's tail.
    A cold cache (``CACHE_COLD`` in env) is emptied first."""
    if env.get(CACHE_COLD):
        shutil.rmtree(env["CONFORMANCE_CACHE_DIR"], ignore_errors=True)
    with tempfile.TemporaryFile() as stderr:
        launched, started = time.time(), time.perf_counter()
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
        _, status, usage = os.wait4(process.pid, 0)  # its own rusage, where RUSAGE_CHILDREN keeps a maximum of all
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        stderr.seek(0)
        tail = stderr.read()[-2000:].decode(errors="replace")
    return {"wall_s": wall, "launched": launched, "exit": process.returncode, "rss_mib": usage.ru_maxrss / 1024,
            "stderr": tail}


def thread_env(threads: int) -> dict:
    """OMP_NUM_THREADS for both commands: torch's intra-op threads, as certify's --threads sets them."""
    return {**os.environ, "OMP_NUM_THREADS": str(threads)}


def cache_env(env: dict, mode: str, folder: str) -> dict:
    """The answer cache in ``folder`` (this benchmark's own), warm, cold or off."""
    env = {**env, "CONFORMANCE_CACHE_DIR": folder, "CONFORMANCE_CACHE": "0" if mode == "off" else "1"}
    if mode == "cold":
        env[CACHE_COLD] = "1"
    return env


def commands(impls: list[str], threads: int) -> dict[str, list[str]]:
    cli = cli_command()
    todo = {TORCH: [sys.executable, "-c", "import torch"]}
    for impl in impls:
        todo[impl] = [*cli, "certify", impl, "--no-training", "--threads", str(threads)]
    return todo


def checked(name: str, result: dict) -> dict:
    if result["exit"] not in (0, 1):  # 1: the mutant fails, as it should
        raise SystemExit(f"{name}: exit {result['exit']}\n{result['stderr']}")
    return result


# -- where the time goes --------------------------------------------------------------------------------------


def profiled_run(command: list[str], env: dict, path: Path) -> tuple[dict, dict]:
    result = measure(command, {**env, "CONFORMANCE_PROFILE": str(path)})
    return result, json.loads(path.read_text())


def phase_seconds(result: dict, profile: dict) -> dict[str, float]:
    """The profile's phases, with the interpreter's start before main and the exit after it."""
    start = profile["main_started"] - result["launched"]
    return {"start": start, **profile["phases"], "exit": result["wall_s"] - start - profile["wall_s"]}


def print_phases(impl: str, result: dict, profile: dict) -> None:
    print(f"\n{impl}, profiled run: {result['wall_s']:.1f} s wall, peak RSS {result['rss_mib']:.0f} MiB")
    for phase, seconds in phase_seconds(result, profile).items():
        print(f"  {PHASE_LABELS[phase]:<44} {seconds:6.2f} s  {100 * seconds / result['wall_s']:5.1f} %")


def print_kinds(checks: list[dict]) -> None:
    """Property checks against plain ones: how many, their whole time, and where it went."""
    for kind in ("hypothesis_checks", "plain_checks"):
        mine = [c for c in checks if c["kind"] == kind]
        shares = defaultdict(float)
        for check in mine:
            for phase, seconds in check["phases"].items():
                shares[phase] += seconds
        split = ", ".join(f"{'own time' if p == kind else PHASE_LABELS[p].split(' (')[0]} {s:.2f}"
                          for p, s in sorted(shares.items(), key=lambda x: -x[1]) if s >= 0.005)
        print(f"  {len(mine)} {kind.split('_')[0]} checks: {sum(shares.values()):.2f} s ({split})")


def print_top_checks(checks: list[dict], top: int) -> None:
    statuses = defaultdict(int)
    for check in checks:
        statuses[check["status"]] += 1
    print(f"  {len(checks)} checks ({', '.join(f'{n} {s}' for s, n in sorted(statuses.items()))}); the costliest:")
    for check in sorted(checks, key=lambda c: -c["total_s"])[:top]:
        shares = check["phases"]
        print(f"    {check['total_s']:5.2f} s  {check['id']:<58} {check['status']:<7}"
              f" candidate {shares.get('candidate_calls', 0):4.2f}, oracle {shares.get('oracle_calls', 0):4.2f},"
              f" diagnosis {shares.get('diagnosis', 0):4.2f}")


def where_the_time_goes(todo: dict, env: dict, impls: list[str], top: int) -> dict[str, float]:
    """One profiled run per implementation, printed; returns their wall times."""
    walls = {}
    with tempfile.TemporaryDirectory() as tmp:
        for impl in impls:
            result, profile = profiled_run(todo[impl], env, Path(tmp) / "phases.json")
            checked(impl, result)
            print_phases(impl, result, profile)
            print_kinds(profile["checks"])
            print_top_checks(profile["checks"], top)
            walls[impl] = result["wall_s"]
    return walls


# -- paired rounds --------------------------------------------------------------------------------------------


def timed_rounds(todo: dict, env: dict, repeat: int) -> dict[str, list[dict]]:
    runs: dict[str, list[dict]] = {name: [] for name in todo}
    for round_ in range(repeat):
        for name, command in todo.items():
            runs[name].append(checked(name, measure(command, env)))
        print(f"round {round_ + 1}: " + ", ".join(f"{name} {runs[name][-1]['wall_s']:.2f} s" for name in todo),
              flush=True)
    return runs


def paired_ratios(runs: dict, name: str, baseline: str) -> list[float]:
    return [mine["wall_s"] / theirs["wall_s"] for mine, theirs in zip(runs[name], runs[baseline], strict=True)]


def fmt_ratio(ratios: list[float], against: str) -> str:
    return f"{statistics.median(ratios):.2f} x {against} (min-max {min(ratios):.2f}-{max(ratios):.2f})"


def print_figures(runs: dict, impls: list[str], profiled_walls: dict[str, float], cache: str) -> None:
    """A line per command, then the ratios alone on the last line."""
    last = []
    for name, mine in runs.items():
        wall, rss = statistics.median(r["wall_s"] for r in mine), statistics.median(r["rss_mib"] for r in mine)
        line = f"{name}: median {wall:.2f} s wall, peak RSS {rss:.0f} MiB"
        if name != TORCH:
            to_torch = paired_ratios(runs, name, TORCH)
            line += f" (profiled run {profiled_walls[name]:.2f} s); {fmt_ratio(to_torch, 'torch')}"
            last.append(f"{name} {statistics.median(to_torch):.2f} x torch")
        if name not in (TORCH, "reference") and "reference" in impls:
            to_reference = paired_ratios(runs, name, "reference")
            line += f", {fmt_ratio(to_reference, 'reference')}"
            last[-1] += f" ({statistics.median(to_reference):.2f} x reference)"
        print(line)
    print(f"ratios, medians of the rounds' own (answer cache {cache}): " + "; ".join(last))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", action="append", help=f"implementation(s) to time (default: {DEFAULT_IMPLS})")
    parser.add_argument("--repeat", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads, OMP_NUM_THREADS (default 1)")
    parser.add_argument("--top", type=int, default=10, help="costliest checks listed per implementation")
    parser.add_argument("--cache", choices=("warm", "cold", "off"), default="warm",
                        help="the catalogue's answers kept on disk: from earlier runs (warm, default), emptied"
                             " before every run (cold), or not used (off)")
    args = parser.parse_args(argv)
    impls = args.impl or list(DEFAULT_IMPLS)
    todo = commands(impls, args.threads)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; threads {args.threads};"
          f" answer cache {args.cache}", flush=True)
    with tempfile.TemporaryDirectory(prefix="benchmark-answers-") as folder:
        env = cache_env(thread_env(args.threads), args.cache, folder)
        measure(todo[TORCH], env)  # warm-up of torch's files; the profiled runs warm the rest
        if args.cache == "warm":  # the profiled runs then show a warm run's phases too
            for impl in impls:
                checked(impl, measure(todo[impl], env))
        profiled_walls = where_the_time_goes(todo, env, impls, args.top)
        print(f"\n{args.repeat} rounds: {', '.join(todo)}; load average {os.getloadavg()[0]:.2f}", flush=True)
        runs = timed_rounds(todo, env, args.repeat)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print_figures(runs, impls, profiled_walls, args.cache)
    return 0


if __name__ == "__main__":
    sys.exit(main())
