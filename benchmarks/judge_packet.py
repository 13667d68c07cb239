"""What the reports said of each held-out bug, as a packet for a judge who reads the bugs and not the diagnosis.

    python benchmarks/diagnosis_accuracy.py --heldout tests/heldout_unseen_6 --jobs 2 --json rows.json
    python benchmarks/judge_packet.py rows.json packet.md

Per bug, each failing check and every statement its report made there (``statements`` of the benchmark's rows): a
name of the catalogue with its bug's first docstring line, a name the report withdrew, a likely cause, a
description. Failing checks that said the same are listed together.
"""

from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path

MUTANTS = Path(__file__).resolve().parents[1] / "implementations" / "mutants"


def meaning(line: str) -> str:
    """A name's line with each catalogue bug's first docstring line after it; other lines as they are."""
    head, _, names = line.partition(": ")
    if not head.startswith(("named", "withdrawn")):
        return line
    texts = []
    for name in (part.strip() for part in names.split(" + ")):
        path = MUTANTS / f"{name}.py"
        doc = ast.get_docstring(ast.parse(path.read_text())) if path.exists() else None
        texts.append(f'{name} = "{doc.splitlines()[0] if doc else "?"}"')
    return f"{head}: " + " + ".join(texts)


def packet(rows: list[dict]) -> str:
    out = ["# What the suite's report said of each bug\n",
           "Per bug: each failing check, and every statement the report makes of the bug there (named: a known bug of"
           " the suite's catalogue; withdrawn: a name the report itself withdrew; pattern / likely cause / described:"
           " statements in words).\n"]
    for row in rows:
        out.append(f"\n## {row['mutant']}  ({row['failing']} failing checks)\n")
        said = row.get("statements") or {}
        if not any(said.values()):
            out.append("(no statement on any failing check)\n")
        together: dict[tuple, list[str]] = {}
        for check, lines in said.items():
            together.setdefault(tuple(lines), []).append(check)
        for lines, checks in together.items():
            out.append(f"- {', '.join(checks)}:")
            out += [f"    - {meaning(line)}" for line in lines] or ["    - (nothing)"]
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", help="the JSON rows of diagnosis_accuracy.py --heldout ... --json")
    parser.add_argument("out", help="the packet (Markdown) to write")
    args = parser.parse_args()
    rows = json.loads(Path(args.rows).read_text())
    Path(args.out).write_text(packet(rows))
    print(f"{len(rows)} bugs")


if __name__ == "__main__":
    main()
