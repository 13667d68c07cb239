"""How well the diagnosis explains failures of adapters that expose only the model, over the mutant catalogue.

    python benchmarks/model_only_explained.py                 # every forward mutant
    python benchmarks/model_only_explained.py --jobs 2
    python benchmarks/model_only_explained.py pre_norm gelu_instead_of_relu --timing

Most adapters of real code expose only ``build_model`` and the model (tests/adapters/views.py ModelOnly).
For each forward mutant M, a model-only view of it is certified (``--no-training``, in process) and each
failing check is scored:

* *confirmed*: it names a known bug, confirmed on a second problem (the JSON ``diagnosis``);
* *explained*: confirmed, or it carries a likely cause (a structural pattern), or says where the model
  differs (layer-by-layer, or by ablation through ``load_weights``: "model-only localisation ...");
* otherwise *unexplained*.

``--timing`` also certifies each view with the whole catalogue left out (``CONFORMANCE_DIAGNOSIS_EXCLUDE``),
and prints the share of the run the catalogue's reruns took: (with - without) / with, with the answers kept on
disk off (``CONFORMANCE_CACHE=0``), so that every rerun is paid.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

VIEW = '''
from conformance.boundary.loading import import_target

inner = import_target("mutant:{name}")


class ModelOnly:
    """Only build_model and the model it returns, as most adapters of real code."""

    conventions = inner.conventions

    def build_model(self, config, seed):
        return inner.build_model(config, seed)


adapter = ModelOnly()
'''
LOCALISED = ("model-only localisation", "first divergence", "every encoder layer agrees", "every decoder layer agrees",
             "only the weights it reports differ")


def certify_view(name: str, exclude: str = "") -> tuple[dict, float]:
    """The JSON report of a model-only view of ``mutant:<name>`` and the run's wall time."""
    from conformance.cli import main
    from conformance.diagnosis import EXCLUDE_ENV

    os.environ[EXCLUDE_ENV] = exclude
    with tempfile.TemporaryDirectory() as tmp:
        view, report = Path(tmp) / f"model_only_{name}.py", Path(tmp) / "report.json"
        view.write_text(VIEW.format(name=name))
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            main(["certify", str(view), "--no-isolate", "--no-training", "--json", str(report)])
        return json.loads(report.read_text()), time.perf_counter() - start


def kind(check: dict) -> str:
    if check.get("diagnosis"):
        return "confirmed"
    if check.get("likely_cause") or any(text in (check.get("message") or "") for text in LOCALISED):
        return "explained"
    return "unexplained"


def score(name: str, timing: bool) -> dict:
    with contextlib.suppress(ImportError):
        import torch

        torch.set_num_threads(1)
    report, wall = certify_view(name)
    failing = [check for check in report["checks"] if check["status"] in ("failed", "error")]
    kinds = [kind(check) for check in failing]
    row = {"mutant": name, "failing": len(failing), "confirmed": kinds.count("confirmed"),
           "explained": kinds.count("explained"),
           "unexplained": [c["id"] for c, k in zip(failing, kinds, strict=True) if k == "unexplained"],
           "wall": wall, "wall_without": None}
    if timing and failing:
        from conformance.implementations import mutants

        row["wall_without"] = certify_view(name, exclude=",".join(mutants.names()))[1]
    return row


def pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "n/a"


def render(rows: list[dict]) -> str:
    lines = [f"{'mutant':<44} {'failing':>7} {'confirmed':>9} {'explained':>9} {'none':>5} {'wall s':>7}"]
    for r in rows:
        lines.append(f"{r['mutant']:<44} {r['failing']:>7} {r['confirmed']:>9} {r['explained']:>9} "
                     f"{len(r['unexplained']):>5} {r['wall']:>7.1f}")
        lines += [f"    unexplained: {check}" for check in r["unexplained"]]
    failing = sum(r["failing"] for r in rows)
    confirmed = sum(r["confirmed"] for r in rows)
    explained = confirmed + sum(r["explained"] for r in rows)
    caught = sum(1 for r in rows if r["failing"])
    lines += ["", f"model-only views: {len(rows)}, caught (some check fails or errors): {caught}",
              f"failing checks: {failing}; with a confirmed diagnosis: {confirmed} ({pct(confirmed, failing)});"
              f" with any explanation (diagnosis, likely cause, localisation): {explained} ({pct(explained, failing)})"]
    timed = [r for r in rows if r["wall_without"] is not None]
    if timed:
        with_, without = sum(r["wall"] for r in timed), sum(r["wall_without"] for r in timed)
        lines.append(f"diagnosis share of a failing run (catalogue reruns): {pct(with_ - without, with_)}"
                     f" ({with_:.0f} s with, {without:.0f} s without, {len(timed)} views)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from conformance.implementations import mutants

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="mutants (default: every forward mutant)")
    parser.add_argument("--jobs", type=int, default=1, help="views certified in parallel processes")
    parser.add_argument("--timing", action="store_true", help="also time each view without the catalogue")
    args = parser.parse_args(argv)
    if args.timing:  # the catalogue's reruns measured as they cost: none read from an earlier run's answers
        os.environ["CONFORMANCE_CACHE"] = "0"
    expected = mutants.expected()
    names = args.names or [name for name in mutants.names() if not expected[name].training]
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(score, names, [args.timing] * len(names)))
    print(render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
