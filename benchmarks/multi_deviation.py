"""How many deviations of code that deviates in several places at once the diagnosis states, and what else it says.

    python benchmarks/multi_deviation.py                 # every case of tests/heldout_multi/, one at a time
    python benchmarks/multi_deviation.py --jobs 2        # cases in 2 processes
    python benchmarks/multi_deviation.py fused_qkv_einsum_gelu --json rows.json

Each case of ``tests/heldout_multi/`` (an implementation in the style of real code with 2 to 4 deviations, and the
words a correct statement of each contains, in ``expected.toml``) is certified as a user certifies it
(``--no-training``, in this process). Every failing check's statements are gathered: its likely cause, the names of
the known bugs it matched, its measured descriptions; and each advisory check's message. A deviation is *stated*
when one statement holds every word of its ``words`` (or of one of its ``alternatives``), or names one of its
``named`` catalogue bugs. Deviations that no ``--no-training`` run can see (``training_only``) are counted apart.
The statements no deviation accounts for are printed per case, for a person to judge: a statement can be true in
other words than the set's, or false.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
import tomllib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

CASES = Path(__file__).resolve().parents[1] / "tests" / "heldout_multi"


def certify(path: Path) -> dict:
    from conformance.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        with contextlib.redirect_stdout(io.StringIO()):
            main(["certify", str(path), "--no-training", "--no-isolate", "--progress", "off", "--json", str(report)])
        return json.loads(report.read_text())


def statements(check: dict) -> list[str]:
    """What a failing check says of its cause: the likely cause, each known bug it matched, each description."""
    found = [check.get("likely_cause") or ""]
    for match in check.get("diagnosis") or []:
        found += [f"mutant:{name}" for name in (match.get("mutants") or [match.get("mutant")]) if name]
        found.append(match.get("bug") or "")
    found += [description.get("text", "") for description in check.get("descriptions") or []]
    return [text for text in found if text]


def holds(text: str, words: list[str]) -> bool:
    return bool(words) and all(word.lower() in text.lower() for word in words)


def states(text: str, deviation: dict) -> bool:
    if any(f"mutant:{name}" in text for name in deviation.get("named", [])):
        return True
    return any(holds(text, words) for words in [deviation.get("words", []), *deviation.get("alternatives", [])])


def score(name: str) -> dict:
    """One case's row: its deviations stated or not, and the statements no deviation accounts for."""
    import torch

    torch.set_num_threads(1)
    declared = tomllib.loads((CASES / "expected.toml").read_text())[name]
    started = time.perf_counter()
    report = certify(CASES / f"{name}.py")
    failing = [check for check in report["checks"] if check["status"] in ("failed", "error")]
    said = {text: check["id"] for check in failing for text in statements(check)}
    # an advisory check's message is the report's statement too (a convention: an epsilon fixed in the code)
    said |= {check["message"].splitlines()[0]: check["id"] for check in report["checks"]
             if check["status"] == "advisory" and check.get("message")}
    rows = []
    for deviation in declared.get("deviation", []):
        by = sorted({check for text, check in said.items() if states(text, deviation)})
        rows.append({"what": deviation["what"], "training_only": deviation.get("training_only", False),
                     "stated_by": by})
    accounted = {text for text in said for d in declared.get("deviation", []) if states(text, d)}
    return {"case": name, "seconds": time.perf_counter() - started, "failing": len(failing), "deviations": rows,
            "unexplained_checks": sum(1 for check in failing if not statements(check)),
            "other_statements": sorted({f"{said[text]}: {text}" for text in said if text not in accounted
                                        and not text.startswith("mutant:")})}


def print_rows(rows: list[dict]) -> None:
    seen = stated = 0
    for row in rows:
        visible = [d for d in row["deviations"] if not d["training_only"]]
        got = [d for d in visible if d["stated_by"]]
        seen, stated = seen + len(visible), stated + len(got)
        print(f"\n{row['case']}: {len(got)}/{len(visible)} deviations stated ({row['failing']} failing checks,"
              f" {row['unexplained_checks']} with nothing said; {row['seconds']:.0f} s)")
        for d in row["deviations"]:
            mark = "training only" if d["training_only"] else ("STATED" if d["stated_by"] else "not stated")
            print(f"  [{mark}] {d['what']}" + (f"  <- {', '.join(d['stated_by'][:3])}" if d["stated_by"] else ""))
        for text in row["other_statements"]:
            print(f"  other: {text[:220]}")
    print(f"\ndeviations a --no-training run can see: {seen}; stated: {stated} ({100 * stated / max(seen, 1):.1f} %)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="cases to score (default: every case)")
    parser.add_argument("--jobs", type=int, default=1, help="cases scored in parallel processes")
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args(argv)
    names = args.names or sorted(tomllib.loads((CASES / "expected.toml").read_text()))
    with ProcessPoolExecutor(max(1, args.jobs)) as pool:
        rows = list(pool.map(score, names))
    print_rows(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
