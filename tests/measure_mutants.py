"""Measure what each mutant fails, errors and is advised on; with --write, rewrite CAUGHT_BY, ERRORED, ADVISORY.

    python tests/measure_mutants.py                       # every mutant: print the differences
    python tests/measure_mutants.py pre_norm --write      # rewrite pre_norm's declarations
    python tests/measure_mutants.py --jobs 2 --write      # after adding a check: every mutant

Certifies each mutant as tests/test_mutant_catalogue.py does (``--no-training``; with training for a
``TRAINING`` mutant) and compares the failed and errored check ids with the module's declarations.
Review each difference before writing it: a new check that a mutant fails belongs in its CAUGHT_BY, a
check that stopped catching a mutant is a weakened check.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import conformance.implementations.mutants as mutants_package

MUTANTS_DIR = Path(mutants_package.__file__).parent
KEYS = {"CAUGHT_BY": "failed", "ERRORED": "error", "ADVISORY": "advisory"}


def declarations(source: str) -> dict[str, ast.Assign]:
    return {node.targets[0].id: node for node in ast.parse(source).body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in (*KEYS, "TRAINING")}


def measure(name: str, training: bool) -> dict[str, set[str]]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.json"
        args = [] if training else ["--no-training"]
        subprocess.run(["transformer-conformance", "certify", f"mutant:{name}", "--json", str(path), *args],
                       capture_output=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
        checks = json.loads(path.read_text())["checks"]
    return {key: {c["id"] for c in checks if c["status"] == status} for key, status in KEYS.items()}


def literal(key: str, ids: set[str]) -> str:
    if not ids:
        return f"{key} = set()\n"
    return f"{key} = {{\n" + "".join(f'    "{check_id}",\n' for check_id in sorted(ids)) + "}\n"


def rewrite(path: Path, measured: dict[str, set[str]]) -> None:
    """Replace the CAUGHT_BY and ERRORED assignments (bottom up, so line numbers stay valid)."""
    source = path.read_text()
    lines = source.splitlines(keepends=True)
    found = declarations(source)
    for key in sorted((k for k in KEYS if k in found), key=lambda k: -found[k].lineno):
        node = found[key]
        lines[node.lineno - 1:node.end_lineno] = [literal(key, measured[key])]
    path.write_text("".join(lines))
    if "ADVISORY" not in found and measured["ADVISORY"]:  # a new declaration goes after ERRORED
        source = path.read_text()
        lines = source.splitlines(keepends=True)
        end = declarations(source)["ERRORED"].end_lineno
        lines[end:end] = [literal("ADVISORY", measured["ADVISORY"])]
        path.write_text("".join(lines))


def check_mutant(name: str, write: bool) -> str:
    path = MUTANTS_DIR / f"{name}.py"
    found = declarations(path.read_text())
    training = "TRAINING" in found and ast.literal_eval(found["TRAINING"].value)
    measured = measure(name, training)
    lines = []
    for key in KEYS:
        declared = set(ast.literal_eval(found[key].value)) if key in found else set()
        lines += [f"    {key} + {check_id}" for check_id in sorted(measured[key] - declared)]
        lines += [f"    {key} - {check_id}" for check_id in sorted(declared - measured[key])]
    if lines and write:
        rewrite(path, measured)
    return f"{name}: {'rewritten' if lines and write else 'differs' if lines else 'as declared'}\n" + "".join(
        line + "\n" for line in lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*")
    parser.add_argument("--write", action="store_true", help="rewrite the declarations that differ")
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args(argv)
    with ThreadPoolExecutor(args.jobs) as pool:
        for report in pool.map(lambda name: check_mutant(name, args.write), args.names or mutants_package.names()):
            print(report, end="", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
