"""Measure what each mutant fails, errors and is advised on; --write rewrites implementations/mutants/expected.toml.

    python tools/measure_mutants.py                       # every mutant: print the differences
    python tools/measure_mutants.py pre_norm --write      # rewrite pre_norm's table
    python tools/measure_mutants.py --jobs 2 --write      # after adding a check: every mutant
    python tools/measure_mutants.py --checks 'new_check' --write   # only that check, on every mutant (faster)
    python tools/measure_mutants.py --dtype float16 --write # the half-precision tables ([name.float16])

Certifies each mutant as tests/test_mutant_catalogue.py does (``--no-training``; with training for a
mutant whose table says ``training = true``) and compares the failed, errored and advisory check ids with
its table (``caught_by``, ``errored``, ``advisory``); a new mutant without a table gets one. It also says
which pinned ``messages`` no longer appear. Review each difference before writing it: a new check that a
mutant fails belongs in its ``caught_by``, a check that stopped catching a mutant is a weakened check.
``--write`` replaces only the measured sets: ``messages``, ``training``, ``caught_by_training``, ``described``
and ``consequences`` stay as written (edit them by hand).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conformance.implementations import mutants
from conformance.implementations.mutants import OUTCOMES, Expected


def certify(name: str, training: bool, select: str | None = None, dtype: str | None = None) -> list[dict]:
    """The checks of the JSON report of ``certify mutant:<name>`` (``-k select``, ``--dtype dtype`` when given)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.json"
        args = ([] if training else ["--no-training"]) + (["-k", select] if select else []) \
            + (["--dtype", dtype] if dtype else [])
        done = subprocess.run(
            ["transformer-conformance", "certify", f"mutant:{name}", "--json", str(path), "--progress", "off", *args],
            capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
        if not path.exists():
            raise RuntimeError(f"certify mutant:{name} wrote no report (exit {done.returncode}):\n{done.stderr}")
        return json.loads(path.read_text())["checks"]


def measured(declared: Expected, checks: list[dict], *, only_these: bool = False) -> Expected:
    """``declared`` with its caught_by, errored and advisory replaced by what ``checks`` show; ``only_these``:
    replaced for the checks that ran only (a ``--checks`` selection), the others kept as declared."""
    ran = {c["id"] for c in checks} if only_these else None
    sets = {}
    for key, status in OUTCOMES.items():
        found = frozenset(c["id"] for c in checks if c["status"] == status)
        sets[key] = found if ran is None else frozenset(getattr(declared, key) - ran) | found
    return dataclasses.replace(declared, **sets)


def differences(declared: Expected, got: Expected, checks: list[dict]) -> list[str]:
    """``caught_by + id`` (newly caught), ``caught_by - id`` (no longer), ``messages ! id`` (pin not found)."""
    lines = []
    for key in OUTCOMES:
        before, after = getattr(declared, key), getattr(got, key)
        lines += [f"    {key} + {check_id}" for check_id in sorted(after - before)]
        lines += [f"    {key} - {check_id}" for check_id in sorted(before - after)]
    messages = {c["id"]: c.get("message") or "" for c in checks}
    lines += [f"    messages ! {check_id}: {text!r} not in its message"
              for check_id, text in sorted(declared.messages.items()) if text not in messages.get(check_id, "")]
    return lines


def measure(name: str, declared: Expected | None, select: str | None = None,
            dtype: str | None = None) -> tuple[str, Expected]:
    """(the report lines for ``name``, its table as measured); with ``dtype``, its table for that half dtype."""
    whole = declared or Expected()
    if dtype is not None:
        report, got = measure_dtype(name, whole.dtypes.get(dtype), select, dtype)
        return report, dataclasses.replace(whole, dtypes={**whole.dtypes, dtype: got})
    declared = whole
    checks = certify(name, declared.training, select)
    got = measured(declared, checks, only_these=bool(select))
    lines = differences(declared, got, checks)
    if select:  # pins of checks that did not run are not checked
        ran = {c["id"] for c in checks}
        lines = [line for line in lines if not line.startswith("    messages !") or line.split()[2].rstrip(":") in ran]
    status = "new" if declared == Expected() else "differs" if lines else "as declared"
    return f"{name}: {status}\n" + "".join(line + "\n" for line in lines), got


def measure_dtype(name: str, declared: Expected | None, select: str | None, dtype: str) -> tuple[str, Expected]:
    declared = declared or Expected()
    checks = certify(name, False, select, dtype)
    got = measured(declared, checks, only_these=bool(select))
    lines = differences(declared, got, checks)
    status = "new" if declared == Expected() else "differs" if lines else "as declared"
    return f"{name} ({dtype}): {status}\n" + "".join(line + "\n" for line in lines), got


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="mutants to measure (default: all)")
    parser.add_argument("--write", action="store_true", help="rewrite the tables that differ")
    parser.add_argument("--jobs", type=int, default=1, help="mutants certified in parallel processes")
    parser.add_argument("--checks", metavar="EXPR", help="measure only the checks -k EXPR selects; the others stay")
    parser.add_argument("--dtype", choices=mutants.HALF_DTYPES,
                        help="measure the tables for this half dtype (default names: the mutants that have one)")
    args = parser.parse_args(argv)
    tables = mutants.expected()
    unknown = sorted(set(args.names) - set(mutants.names()))
    if unknown:
        parser.error(f"no such mutant: {', '.join(unknown)}")
    orphans = sorted(set(tables) - set(mutants.names()))
    if orphans:
        print(f"tables without a mutant (removed by --write): {', '.join(orphans)}")
    names = args.names or ([n for n in mutants.names() if args.dtype in tables.get(n, Expected()).dtypes]
                           if args.dtype else mutants.names())
    with ThreadPoolExecutor(args.jobs) as pool:
        results = pool.map(lambda n: measure(n, tables.get(n), args.checks, args.dtype), names)
        for name, (report, got) in zip(names, results, strict=True):
            print(report, end="", flush=True)
            tables[name] = got
    if args.write:
        mutants.EXPECTED_PATH.write_text(mutants.render({n: t for n, t in tables.items() if n in mutants.names()}))
        print(f"written: {mutants.EXPECTED_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
