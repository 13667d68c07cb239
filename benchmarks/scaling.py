"""What the base-size checks cost, and how a forward pass grows with N, d_model, batch and length.

    python benchmarks/scaling.py                  # 3 rounds of the base-size checks, 3 forwards per point
    python benchmarks/scaling.py --repeat 5 --forwards 5

Two measurements, each in fresh processes, with each process's peak memory (RSS, ``os.wait4``):

1. ``transformer-conformance certify reference --no-training -k base_size``: the six checks with ``base_size``
   in their name (the layers, the FFN and multi-head attention at d_model 512, d_ff 2048, h 8; the logits at one
   layer each side; the forward of the whole base model, 63,082,496 parameters, against its golden tensors),
   beside a bare ``python -c "import torch"`` in the same rounds (ratios within a round, medians over rounds),
   and one profiled run (``CONFORMANCE_PROFILE``, ``conformance/run/timing.py``) for each check's time.
2. The reference model (``implementations/reference/model.py``, float32, one torch thread as ``certify`` runs
   it) built and run forward (``no_grad``, evaluation mode, after one warm-up forward) at the paper's base
   size, N 6, d_model 512, h 8, d_ff 2048, a shared vocabulary of 37,000, batch 4 and source and target
   length 64, and at points that change one of them: N 1/2/6, d_model 128/256/512 (d_ff = 4 d_model as in the
   paper, h 8), batch 1/4/16, length 16/64/256. Per point: parameters, build time, median forward time, peak
   RSS; per dimension, the growth exponent between its smallest and largest point (time ~ x^k).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from catalogue import TORCH, checked, measure, paired_ratios, profiled_run, thread_env
from startup import cli_command

BASE = {"N": 6, "d_model": 512, "batch": 4, "length": 64}
VARIED = {"N": (1, 2, 6), "d_model": (128, 256, 512), "batch": (1, 4, 16), "length": (16, 64, 256)}
BASE_SIZE_SELECTION = "base_size"


# -- one point, in its own process ----------------------------------------------------------------------------


def forward_point(point: dict, forwards: int) -> dict:
    """Build the reference at ``point`` and time its forward pass (run in a fresh process: ``--point``)."""
    import torch

    from conformance.config import base_config
    from conformance.implementations.reference.model import Transformer

    torch.set_num_threads(1)  # certify's default (--threads 1)
    config = base_config(N=point["N"], d_model=point["d_model"], d_ff=4 * point["d_model"])
    started = time.perf_counter()
    model = Transformer(config, seed=0).eval()
    built = time.perf_counter() - started
    generator = torch.Generator().manual_seed(0)
    shape = (point["batch"], point["length"])
    src = torch.randint(3, config.src_vocab, shape, generator=generator)
    tgt_in = torch.randint(3, config.tgt_vocab, shape, generator=generator)
    times = []
    with torch.no_grad():
        model(src, tgt_in)  # warm-up: the allocator's first pages, one-off kernel choices
        for _ in range(forwards):
            started = time.perf_counter()
            model(src, tgt_in)
            times.append(time.perf_counter() - started)
    return {"parameters": sum(p.numel() for p in model.parameters()), "build_s": built,
            "forward_s": statistics.median(times)}


def measure_point(point: dict, forwards: int, tmp: Path) -> dict:
    out = tmp / "point.json"
    command = [sys.executable, __file__, "--point", json.dumps(point), "--forwards", str(forwards), "--out", str(out)]
    result = measure(command, thread_env(1))
    if result["exit"] != 0:
        raise SystemExit(f"point {point}: exit {result['exit']}\n{result['stderr']}")
    return {**json.loads(out.read_text()), "rss_mib": result["rss_mib"]}


def growth(points: list[tuple[int, dict]]) -> float:
    """k in time ~ x^k, between the smallest and the largest x."""
    (x0, first), (x1, last) = points[0], points[-1]
    return math.log(last["forward_s"] / first["forward_s"]) / math.log(x1 / x0)


def scaling_tables(forwards: int) -> None:
    measured: dict[tuple, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for dimension, values in VARIED.items():
            others = ", ".join(f"{k} {v}" for k, v in BASE.items() if k != dimension)
            print(f"\n{dimension} (the others as the base: {others})")
            print(f"  {dimension:>8} {'parameters':>12} {'build s':>8} {'forward s':>10} {'peak RSS MiB':>13}")
            rows = []
            for value in values:
                point = {**BASE, dimension: value}
                key = tuple(point.values())
                if key not in measured:  # the base point is in every table: measured once
                    measured[key] = measure_point(point, forwards, Path(tmp))
                row = measured[key]
                rows.append((value, row))
                print(f"  {value:>8} {row['parameters']:>12,} {row['build_s']:>8.2f} {row['forward_s']:>10.3f}"
                      f" {row['rss_mib']:>13.0f}", flush=True)
            print(f"  forward time ~ {dimension}^{growth(rows):.2f} from {values[0]} to {values[-1]}")
            if dimension == "N":  # the fixed part (embeddings, the 37,000-way output layer) hides the layers' own
                per_layer = (rows[-1][1]["forward_s"] - rows[0][1]["forward_s"]) / (values[-1] - values[0])
                print(f"  each encoder and decoder layer pair adds {1000 * per_layer:.0f} ms")


# -- the base-size checks ---------------------------------------------------------------------------------------


def base_size_checks(repeat: int) -> None:
    certify = [*cli_command(), "certify", "reference", "--no-training", "-k", BASE_SIZE_SELECTION]
    todo, env = {TORCH: [sys.executable, "-c", "import torch"], "base-size checks": certify}, thread_env(1)
    with tempfile.TemporaryDirectory() as tmp:
        result, profile = profiled_run(certify, env, Path(tmp) / "phases.json")
    checked("base-size checks", result)
    print(f"certify reference --no-training -k {BASE_SIZE_SELECTION}, profiled run: {result['wall_s']:.2f} s wall,"
          f" peak RSS {result['rss_mib']:.0f} MiB; per check:")
    for check in sorted(profile["checks"], key=lambda c: -c["total_s"]):
        shares = check["phases"]
        print(f"  {check['total_s']:5.2f} s  {check['id']:<52} {check['status']:<7}"
              f" candidate {shares.get('candidate_calls', 0):4.2f}, oracle {shares.get('oracle_calls', 0):4.2f},"
              f" own {shares.get('plain_checks', 0) + shares.get('hypothesis_checks', 0):4.2f}")
    runs: dict[str, list[dict]] = {name: [] for name in todo}
    for _ in range(repeat):
        for name, command in todo.items():
            runs[name].append(checked(name, measure(command, env)))
    for name, mine in runs.items():
        print(f"{name}: median {statistics.median(r['wall_s'] for r in mine):.2f} s wall,"
              f" peak RSS {statistics.median(r['rss_mib'] for r in mine):.0f} MiB over {repeat} rounds")
    print(f"base-size checks: {statistics.median(paired_ratios(runs, 'base-size checks', TORCH)):.2f} x torch")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds of the base-size checks (default 3)")
    parser.add_argument("--forwards", type=int, default=3, help="timed forward passes per point (default 3)")
    parser.add_argument("--point", help=argparse.SUPPRESS)  # a child process: one point, as JSON
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.point:
        Path(args.out).write_text(json.dumps(forward_point(json.loads(args.point), args.forwards)))
        return 0
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}", flush=True)
    base_size_checks(args.repeat)
    scaling_tables(args.forwards)
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
