"""How long each rendering of a report takes and how large it is, against the aims: all formats together under 2 s
for the reference's full report, the HTML under 3 MB.

    python benchmarks/report_rendering.py                   # certifies the reference with training first
    python benchmarks/report_rendering.py r.json --repeat 5 # a saved report

Renders from the parsed JSON report in this process (what ``transformer-conformance report`` does after
reading the file), each format ``--repeat`` times; prints the median time and the size of each format, the
total, and the time to read and check the JSON file.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path


def certified_reference(folder: Path) -> Path:
    from conformance.cli import main

    path = folder / "reference.json"
    with contextlib.redirect_stdout(io.StringIO()):
        main(["certify", "reference", "--json", str(path), "--progress", "off"])
    return path


def timed(render, report: dict, repeat: int) -> tuple[float, int]:
    times, size = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        size = len(render(report).encode())
        times.append(time.perf_counter() - started)
    return statistics.median(times), size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", nargs="?", help="a saved JSON report (default: certify the reference, with training)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    from conformance.reports import formats, view

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.report) if args.report else certified_reference(Path(tmp))
        started = time.perf_counter()
        report = view.load(path)
        loading = time.perf_counter() - started
        print(f"report: {path} ({path.stat().st_size / 1024:,.0f} kB, {len(report['checks'])} checks), read and"
              f" checked in {loading * 1000:.0f} ms")
    total = 0.0
    for name, (label, render) in formats.FORMATS.items():
        seconds, size = timed(render, report, args.repeat)
        total += seconds
        print(f"  {name:<9} {seconds * 1000:8.1f} ms  {size / 1024:9,.1f} kB  ({label})")
    print(f"all formats: {total * 1000:.1f} ms (median of {args.repeat} each); with reading the JSON:"
          f" {(total + loading) * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
