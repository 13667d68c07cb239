"""Half precision against float32: the reference's worst margin per check and dtype, and what a run costs.

    python benchmarks/half_precision.py                       # seeds 0-2, --no-training, the three dtypes
    python benchmarks/half_precision.py --seeds 0-4 --impl torch-nn-transformer-fixed

Certifies IMPL (default the built-in reference) with ``--no-training --no-diagnosis --progress off`` in float32,
float16 and bfloat16 (``--dtype``), once per seed, each in a fresh process, and prints:
(1) per check, the worst margin over the seeds in each dtype (the fraction of its tolerance the answer used:
1 is the tolerance's edge; a check with no measured comparison shows "-"), the checks that did not pass;
(2) the wall time of each dtype's runs against float32's (median over the seeds).
The tolerances of ``conformance/tolerances.py`` in units of u (``half``) are set from the first table: a factor
at or above 2 between the worst margin and 1 over the drawn problems.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DTYPES = ("float32", "float16", "bfloat16")


def seeds_arg(text: str) -> list[int]:
    if "-" in text:
        low, high = text.split("-")
        return list(range(int(low), int(high) + 1))
    return [int(seed) for seed in text.split(",")]


def certify(impl: str, dtype: str, seed: int) -> tuple[list[dict], float]:
    """The checks of one run's JSON report, and its wall time."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.json"
        args = ["transformer-conformance", "certify", impl, "--no-training", "--no-diagnosis", "--progress", "off",
                "--seed", str(seed), "--json", str(path)] + ([] if dtype == "float32" else ["--dtype", dtype])
        started = time.perf_counter()
        subprocess.run(args, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        if not path.exists():
            raise RuntimeError(f"{' '.join(args)} wrote no report")
        return json.loads(path.read_text())["checks"], elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", default="reference")
    parser.add_argument("--seeds", type=seeds_arg, default=seeds_arg("0-2"))
    args = parser.parse_args(argv)
    worst: dict[str, dict[str, float | None]] = {}
    not_passed: dict[str, set[str]] = {dtype: set() for dtype in DTYPES}
    times: dict[str, list[float]] = {dtype: [] for dtype in DTYPES}
    for seed in args.seeds:
        for dtype in DTYPES:
            checks, elapsed = certify(args.impl, dtype, seed)
            times[dtype].append(elapsed)
            for check in checks:
                row = worst.setdefault(check["id"], {})
                margin = check.get("margin")
                if margin is not None:
                    row[dtype] = max(margin, row.get(dtype) or 0.0)
                else:
                    row.setdefault(dtype, None)
                if check["status"] != "passed":
                    not_passed[dtype].add(f"{check['id']} ({check['status']})")
            print(f"seed {seed} {dtype}: {len(checks)} checks, {elapsed:.1f} s", file=sys.stderr, flush=True)
    print(f"{args.impl}, seeds {args.seeds[0]}-{args.seeds[-1]}: the worst margin per check (fraction of its"
          " tolerance used; 1 = the edge)")
    print(f"{'check':<62} " + " ".join(f"{dtype:>9}" for dtype in DTYPES))
    for check_id, row in sorted(worst.items(), key=lambda item: -max(v or 0.0 for v in item[1].values())):
        cells = [row.get(dtype) for dtype in DTYPES]
        text = " ".join(f"{'-' if v is None else format(v, '.3g'):>9}" if dtype in row else f"{'n/r':>9}"
                        for dtype, v in zip(DTYPES, cells, strict=True))
        print(f"{check_id[:62]:<62} {text}")
    for dtype in DTYPES:
        print(f"{dtype}: not passed: {', '.join(sorted(not_passed[dtype])) or 'none'}")
    base = statistics.median(times["float32"])
    for dtype in DTYPES:
        median = statistics.median(times[dtype])
        print(f"{dtype}: median {median:.1f} s per run ({median / base:.2f} x float32)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
