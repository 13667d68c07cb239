"""How often the diagnosis names the right bug, over the mutant catalogue.

    python benchmarks/diagnosis_accuracy.py             # every mutant; a table, then the totals
    python benchmarks/diagnosis_accuracy.py --jobs 2    # mutants in 2 processes
    python benchmarks/diagnosis_accuracy.py --scheduler tcp://HOST:8786   # one task per mutant on a Dask cluster
    python benchmarks/diagnosis_accuracy.py pre_norm softmax_over_queries

For each mutant M of ``implementations/mutants/``, certified as the suite runs it (``--no-training``),
every failing check whose result carries a diagnosis ("matches: <bug> (mutant:x), max diff ...", the
JSON field ``diagnosis``) is scored twice:

1. *In catalogue*: is M named first? A mutant N named first instead counts as right when N behaves
   exactly like M on that check's input: its output differs from M's by at most ``SAME`` (float32
   rounding of the same arithmetic, written differently), so no output of that check can tell the two
   apart. The table counts those separately (``same``).
2. *Leave-one-out*: the same checks rerun with M removed from the catalogue
   (``CONFORMANCE_DIAGNOSIS_EXCLUDE=M``), as for a bug the catalogue does not know. Right is naming
   nothing, or only mutants that behave exactly like M there; anything else is a *false naming*: a
   wrong bug named with the confidence of a match.

A mutant with no diagnosed failure (its failing checks have no ``rerun``; the training mutants, which
fail nothing without training) is listed with zeros; the last column counts its failing checks that
carry any explanation at all (a diagnosis or a ``likely cause`` line of the older oracle-variant path).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

SAME = 1e-6  # max abs diff under which two mutants' outputs on a check's input are the same behaviour


def certify(name: str, *args: str, exclude: str = "") -> dict:
    """The JSON report of ``certify mutant:<name> --no-training`` run in this process."""
    from conformance.cli import main
    from conformance.diagnosis import EXCLUDE_ENV

    os.environ[EXCLUDE_ENV] = exclude
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.json"
        with contextlib.redirect_stdout(io.StringIO()):
            main(["certify", f"mutant:{name}", "--no-training", "--json", str(path), *args])
        return json.loads(path.read_text())


def failing(report: dict) -> list[dict]:
    return [check for check in report["checks"] if check["status"] in ("failed", "error")]


def right(named: list[dict], name: str) -> str | None:
    """"self" when the first match is ``name``, "same" when it is a mutant with the same output, else None."""
    if not named:
        return None
    first = named[0]
    if first["mutant"] == name:
        return "self"
    return "same" if first["max_abs"] <= SAME else None


def score(name: str) -> dict:
    """One mutant's row: diagnosed checks, in-catalogue hits, leave-one-out outcomes."""
    torch_threads()
    report = certify(name)
    failed = failing(report)
    diagnosed = {check["id"]: check["diagnosis"] for check in failed if check.get("diagnosis")}
    row = {"mutant": name, "failing": len(failed), "explained": sum(bool(c.get("diagnosis") or c.get("likely_cause"))
                                                                    for c in failed),
           "diagnosed": len(diagnosed), "self": 0, "same": 0, "wrong": [], "loo_nothing": 0, "loo_same": 0,
           "loo_false": []}
    for check_id, named in diagnosed.items():
        verdict = right(named, name)
        if verdict:
            row[verdict] += 1
        else:
            row["wrong"].append(f"{check_id}: {named[0]['mutant']}")
    if diagnosed:
        keyword = " or ".join(sorted({check_id.split("[")[0] for check_id in diagnosed}))
        rerun = certify(name, "-k", keyword, exclude=name)
        loo = {check["id"]: check.get("diagnosis") or [] for check in rerun["checks"]}
        for check_id in diagnosed:
            named = loo.get(check_id, [])
            if not named:
                row["loo_nothing"] += 1
            elif all(match["max_abs"] <= SAME for match in named):
                row["loo_same"] += 1
            else:
                row["loo_false"].append(f"{check_id}: {named[0]['mutant']}")
    return row


def score_in_a_process(name: str, script: str) -> dict:
    """On a Dask worker: ``score(name)`` in a fresh process of this script (``--row``): a certify per process, as
    under ``--jobs``, and none in a worker's thread. The workers read the script at the client's path."""
    from conformance.cluster import dies_with

    done = subprocess.run([sys.executable, script, "--row", name], capture_output=True, text=True,
                          preexec_fn=dies_with(os.getpid()))
    if done.returncode != 0:
        raise RuntimeError(f"scoring mutant:{name} exited with {done.returncode}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def score_on_cluster(address: str, names: list[str]) -> list[dict]:
    from conformance.cluster import as_they_finish

    script = str(Path(__file__).resolve())
    rows = {}
    for name, row in as_they_finish(address, score_in_a_process, {name: (name, script) for name in names}):
        if isinstance(row, BaseException):
            raise row
        rows[name] = row
        print(f"[{len(rows)}/{len(names)}] {name}", file=sys.stderr, flush=True)
    return [rows[name] for name in names]


def torch_threads() -> None:
    with contextlib.suppress(ImportError):
        import torch

        torch.set_num_threads(1)


def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "n/a"


def render(rows: list[dict]) -> str:
    head = (f"{'mutant':<38} {'failing':>7} {'diagnosed':>9} {'self':>4} {'same':>4} {'wrong':>5}   "
            f"{'LOO: none':>9} {'same':>4} {'false':>5}   {'explained':>9}")
    lines = [head]
    for r in rows:
        lines.append(f"{r['mutant']:<38} {r['failing']:>7} {r['diagnosed']:>9} {r['self']:>4} {r['same']:>4} "
                     f"{len(r['wrong']):>5}   {r['loo_nothing']:>9} {r['loo_same']:>4} {len(r['loo_false']):>5}"
                     f"   {r['explained']:>9}")
        lines += [f"    wrong first: {w}" for w in r["wrong"]]
        lines += [f"    leave-one-out names: {w}" for w in r["loo_false"]]
    total = {key: sum(r[key] if isinstance(r[key], int) else len(r[key]) for r in rows)
             for key in ("failing", "explained", "diagnosed", "self", "same", "wrong", "loo_nothing", "loo_same",
                         "loo_false")}
    n = total["diagnosed"]
    with_diagnosis = sum(1 for r in rows if r["diagnosed"])
    lines += [
        "",
        f"mutants: {len(rows)}, with at least one diagnosed failure: {with_diagnosis}",
        f"failing checks: {total['failing']}, with any explanation (diagnosis or likely cause): {total['explained']}"
        f" ({pct(total['explained'], total['failing'])}), with a diagnosis: {n}",
        f"accuracy (first named is the mutant, or one with the same output): {total['self'] + total['same']}/{n}"
        f" = {pct(total['self'] + total['same'], n)} (the mutant itself {total['self']}, same output {total['same']},"
        f" wrong {total['wrong']})",
        f"leave-one-out: nothing named {total['loo_nothing']}, only same-output mutants {total['loo_same']},"
        f" false naming {total['loo_false']}/{n} = {pct(total['loo_false'], n)}",
    ]
    return "\n".join(lines)


def cache_state() -> str:
    """Whether the catalogue's answers came from earlier runs: a warm cache makes the wall time no measure of
    the diagnosis's cost (CONFORMANCE_CACHE=0 turns it off)."""
    from conformance.diagnosis import answer_cache

    return f"answer cache in {answer_cache.cache_root()}" if answer_cache.enabled() else "answer cache off"


def main(argv: list[str] | None = None) -> int:
    from conformance.cluster import scheduler_address
    from conformance.implementations import mutants

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="mutants to score (default: all)")
    parser.add_argument("--jobs", type=int, default=1, help="mutants scored in parallel processes")
    parser.add_argument("--scheduler", metavar="ADDRESS", type=scheduler_address,
                        help="score on a Dask cluster, one task per mutant: tcp://HOST:PORT or local:N")
    parser.add_argument("--row", action="store_true", help=argparse.SUPPRESS)  # one mutant's row as JSON (a task)
    args = parser.parse_args(argv)
    names = args.names or mutants.names()
    if args.row:
        print(json.dumps(score(names[0])))
        return 0
    started = time.perf_counter()
    if args.scheduler:
        rows = score_on_cluster(args.scheduler, names)
    elif args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            rows = list(pool.map(score, names))
    else:
        rows = [score(name) for name in names]
    print(render(rows))
    print(f"wall time: {time.perf_counter() - started:.0f} s ({cache_state()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
