"""Seconds from a save to a verdict under ``transformer-conformance watch``: the first previously failing check
(aim <= 1 s) and the whole no-training catalogue (aim: the checks' own time, no imports), against a cold
``certify`` of the same adapter.

    python benchmarks/watch_latency.py              # 5 saves, alternating a buggy and a fixed adapter
    python benchmarks/watch_latency.py --saves 9

The adapter is a file beside the benchmark that imports a forward mutant (attention_mask_ignored) or the
reference; each save rewrites it. The watch runs as a user runs it, in a process of its own; its summary lines
carry the figures. The last lines are the medians:
``save -> first previously failing verdict: <s> s (aim <= 1)`` and, for the saves of the fixed and of the
buggy adapter, ``save -> whole catalogue (fixed): <s> s, the checks' own time <s> s; a cold certify <s> s``.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUGGY = "from conformance.implementations.mutants.attention_mask_ignored import adapter  # noqa: F401\n"
FIXED = "from conformance.implementations.reference.adapter import adapter  # noqa: F401\n"
FIRST = re.compile(r"first previously failing check ([\d.]+) s after the save")
WHOLE = re.compile(r"all verdicts ([\d.]+) s after the save \(the checks' own time ([\d.]+) s\)")


def summaries(process):
    """Each summary the watch prints, as one string."""
    summary = []
    for line in process.stdout:
        summary.append(line)
        if line.startswith("watching "):
            yield "".join(summary)
            summary = []


def cold_certify(adapter: Path) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "conformance", "certify", str(adapter), "--no-training", "--progress",
                    "off"], capture_output=True, check=False)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--saves", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}", flush=True)
    firsts, wholes, owns = [], {"fixed": [], "buggy": []}, {"fixed": [], "buggy": []}
    with tempfile.TemporaryDirectory() as tmp:
        adapter = Path(tmp) / "adapter.py"
        adapter.write_text(BUGGY)
        process = subprocess.Popen([sys.executable, "-m", "conformance", "watch", str(adapter)],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            runs = summaries(process)
            next(runs)  # the first run, at the start
            for save in range(args.saves):
                kind = "fixed" if save % 2 == 0 else "buggy"
                adapter.write_text(FIXED if kind == "fixed" else BUGGY)
                summary = next(runs)
                first, whole = FIRST.search(summary), WHOLE.search(summary)
                if first:
                    firsts.append(float(first.group(1)))
                if whole:
                    wholes[kind].append(float(whole.group(1)))
                    owns[kind].append(float(whole.group(2)))
                print(f"  save {save + 1} ({kind}): first previously failing {first.group(1) if first else '-'} s,"
                      f" whole {whole.group(1) if whole else '-'} s (checks' own {whole.group(2) if whole else '-'} s)",
                      flush=True)
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=60)
        adapter.write_text(FIXED)
        cold = [cold_certify(adapter) for _ in range(3)]
    print(f"save -> first previously failing verdict: {statistics.median(firsts):.2f} s (aim <= 1)")
    for kind in ("fixed", "buggy"):
        if wholes[kind]:
            print(f"save -> whole catalogue ({kind}): {statistics.median(wholes[kind]):.2f} s, the checks' own time"
                  f" {statistics.median(owns[kind]):.2f} s" + (f"; a cold certify {statistics.median(cold):.2f} s"
                                                               if kind == "fixed" else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
