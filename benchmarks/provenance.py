"""Whose code a report credits: a model-only adapter of a bias-free, eps 1e-6 implementation, with the suite's
helpers asked for (``supplied=("greedy_decode", "train_step")``) and without them.

    python benchmarks/provenance.py                 # both, with the training checks
    python benchmarks/provenance.py --no-training   # both, without them

The implementation is the reference model built as the declared configuration (no attention biases, LayerNorm eps
1e-6, declared in ``Conventions.supports``), wrapped by ``TorchAdapter`` with the model only: no function or
component part, as most adapters of real code start. Printed per adapter: the checks run (any status but not
implemented), errors, the checks credited to the implementation (passed) and those passed on the suite's code
(supplied), and the parts that are the implementation's own against those the helpers supplied.
docs/adapter-protocol.md ("Whose code answered") has the figures.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from conformance import Conventions
from conformance.adapters.torch import TorchAdapter
from conformance.implementations.reference.adapter import ATTENTION, NAMES
from conformance.implementations.reference.model import REFERENCE, Transformer

CONVENTIONS = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch",
                          supports={"attention_bias": (False,), "eps": (1e-6,)},
                          reasons={"attention_bias": "the projections carry no biases",
                                   "eps": "every LayerNorm is built with eps 1e-6"})
MODEL = {"forward": lambda m, src, tgt_in: m(src, tgt_in), "attention": ATTENTION}


def module(config):
    return Transformer(config, REFERENCE, seed=0)


without_helpers = TorchAdapter(module, names=NAMES, conventions=CONVENTIONS, model=MODEL)
with_helpers = TorchAdapter(module, names=NAMES, conventions=CONVENTIONS, model=MODEL,
                            supplied=("greedy_decode", "train_step"))


def certify(attribute: str, training: bool) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        command = [sys.executable, "-m", "conformance", "certify", f"{__file__}:{attribute}", "--no-isolate",
                   "--progress", "off", "--json", str(report), *([] if training else ["--no-training"])]
        subprocess.run(command, capture_output=True, text=True, check=False)
        return json.loads(report.read_text())


def row(attribute: str, report: dict) -> str:
    name = report["implementations"][0]["name"]
    counts, whose = report["summary"][name], report["provenance"][name]
    ran = sum(n for status, n in counts.items() if status != "not_implemented")
    total = sum(counts.values())
    return (f"| `{attribute}` | {ran} of {total} | {counts['error']} | {counts['passed']} | {counts['supplied']} |"
            f" {counts['not_implemented']} | {len(whose['own'])}: {', '.join(whose['own'])} |"
            f" {len(whose['supplied'])}: {', '.join(whose['supplied']) or 'none'} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-training", action="store_true")
    args = parser.parse_args()
    print("| adapter | checks run | errors | credited (passed) | supplied | not implemented | own parts |"
          " parts supplied |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for attribute in ("without_helpers", "with_helpers"):
        print(row(attribute, certify(attribute, not args.no_training)), flush=True)


if __name__ == "__main__":
    main()
