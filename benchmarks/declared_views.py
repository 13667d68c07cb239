"""The reference under each declaration of ``tests/adapters/views.py`` (``Declared``): what a certify reports.

    python benchmarks/declared_views.py                     # every view, full and model-only, --no-training
    python benchmarks/declared_views.py --training all      # the same, with the training checks for view "all"
    python benchmarks/declared_views.py --list              # and the checks each ends not implemented or error

Each view declares one limit (biases off, eps 1e-6, d_ff = 4 d_model, at most 100 positions, the loss's eps fixed
at 0.1) or all of them, and raises an error for any call outside its declaration. A row: the checks reported, and
how many passed, ended not implemented (for want of a part: the model-only views' layers; or else), error or
failed. tests/test_declared_views.py asserts what each may end not implemented, and why; this script prints the
figures (the commit that changed them records before and after).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VIEWS = ROOT / "tests" / "adapters" / "views.py"
NAMES = ("bias_free", "eps_1e6", "ffn_4x", "max_len_100", "loss_eps_01", "all")


def certify(attribute: str, training: bool) -> dict:
    """The report of ``certify views.py:attribute``, or {"refused": stderr} when the adapter is refused."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        command = [sys.executable, "-m", "conformance", "certify", f"{VIEWS}:{attribute}", "--json", str(report),
                   "--progress", "off", *(() if training else ("--no-training",))]
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True)
        if not report.exists():
            return {"refused": (done.stderr.strip().splitlines() or ["no report"])[-1]}
        return json.loads(report.read_text())


def lacks_the_part(check: dict) -> bool:
    """Not implemented because the adapter has no such part (a model-only view's layers), not by a declaration."""
    return check["status"] == "not_implemented" and " does not provide " in (check.get("message") or "")


def counts(report: dict) -> dict:
    statuses = [check["status"] for check in report["checks"]]
    no_part = sum(lacks_the_part(check) for check in report["checks"])
    return {"checks": len(statuses), "no_part": no_part, "not_implemented": statuses.count("not_implemented") - no_part,
            **{s: statuses.count(s) for s in ("passed", "error", "failed")}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--training", action="append", default=[], choices=NAMES,
                        help="run the training checks too for this view")
    parser.add_argument("--list", action="store_true", help="list the checks not implemented or in error")
    args = parser.parse_args()
    print("| view | adapter | checks | passed | not implemented (no such part) | not implemented (else) | error"
          " | failed |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in NAMES:
        for shape, attribute in (("every part", f"declared_{name}"), ("model-only", f"declared_{name}_model_only")):
            report = certify(attribute, name in args.training)
            label = name + (" (training)" if name in args.training else "")
            if "refused" in report:
                print(f"| {label} | {shape} | refused at load: {report['refused']} | | | | | |")
                continue
            c = counts(report)
            print(f"| {label} | {shape} | {c['checks']} | {c['passed']} | {c['no_part']} | {c['not_implemented']}"
                  f" | {c['error']} | {c['failed']} |")
            if args.list:
                for check in report["checks"]:
                    if check["status"] in ("not_implemented", "error", "failed") and not lacks_the_part(check):
                        first = (check.get("message") or "").splitlines()[0][:160]
                        print(f"    {check['status']:16} {check['id']}: {first}")


if __name__ == "__main__":
    main()
