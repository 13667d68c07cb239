"""What the CLI costs before it does anything: ``--help``, ``certify --help`` and ``list`` against a bare
``python -c "import numpy"`` (the aim: each <= 1.2 x that floor).

    python benchmarks/startup.py              # 5 rounds
    python benchmarks/startup.py --rounds 9

Each run is a fresh process, the command a user types (the ``transformer-conformance`` console script next to
this interpreter, else ``python -m conformance``). The commands run in turn within a round (numpy, --help,
certify --help, list, numpy, ...), and each ratio is taken within its round, so that a machine whose speed drifts
(other users on a shared machine) moves the command and its baseline alike; the figures are medians over rounds.
The last lines are the figures: ``<command>: <median s> s, <median ratio> x numpy (aim <= 1.2)``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

AIM = 1.2


def cli_command() -> list[str]:
    script = Path(sys.executable).parent / "transformer-conformance"
    if script.is_file():
        return [str(script)]
    found = shutil.which("transformer-conformance")
    return [found] if found else [sys.executable, "-m", "conformance"]


def commands() -> dict[str, list[str]]:
    cli = cli_command()
    return {
        'python -c "import numpy"': [sys.executable, "-c", "import numpy"],
        "transformer-conformance --help": [*cli, "--help"],
        "transformer-conformance certify --help": [*cli, "certify", "--help"],
        "transformer-conformance list": [*cli, "list"],
    }


def run_once(name: str, command: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{name}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    todo = commands()
    baseline = next(iter(todo))
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}", flush=True)
    for name, command in todo.items():  # warm-up: file caches, bytecode
        run_once(name, command)
    walls: dict[str, list[float]] = {name: [] for name in todo}
    ratios: dict[str, list[float]] = {name: [] for name in todo}
    for round_ in range(args.rounds):
        for name, command in todo.items():
            walls[name].append(run_once(name, command))
        for name in todo:
            ratios[name].append(walls[name][-1] / walls[baseline][-1])
        print(f"round {round_ + 1}: " + ", ".join(f"{name} {walls[name][-1]:.3f} s" for name in todo), flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    for name in todo:
        line = f"{name}: {statistics.median(walls[name]):.3f} s"
        if name != baseline:
            line += (f", {statistics.median(ratios[name]):.2f} x numpy (min-max {min(ratios[name]):.2f}-"
                     f"{max(ratios[name]):.2f}; aim <= {AIM})")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
