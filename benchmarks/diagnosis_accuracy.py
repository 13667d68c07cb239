"""How often the diagnosis names the right bug, and how often it describes one the catalogue does not hold.

    python benchmarks/diagnosis_accuracy.py             # every mutant; a table, then the totals
    python benchmarks/diagnosis_accuracy.py --jobs 2    # mutants in 2 processes
    python benchmarks/diagnosis_accuracy.py --scheduler tcp://HOST:8786   # one task per mutant on a Dask cluster
    python benchmarks/diagnosis_accuracy.py pre_norm softmax_over_queries
    python benchmarks/diagnosis_accuracy.py --heldout   # the bugs of tests/heldout/, never in the catalogue
    python benchmarks/diagnosis_accuracy.py --heldout tests/heldout_uncatalogued   # another held-out folder

For each mutant M of ``implementations/mutants/``, certified as the suite runs it (``--no-training``),
every failing check whose result carries a diagnosis ("matches: <bug> (mutant:x), max diff ...", the
JSON field ``diagnosis``) is scored twice:

1. *In catalogue*: is M named first? A mutant N named first instead counts as right when N behaves
   exactly like M on that check's input: its output differs from M's by at most ``SAME`` (float32
   rounding of the same arithmetic, written differently), so no output of that check can tell the two
   apart. The table counts those separately (``same``).
2. *Leave-one-out*: the whole run again with M removed from the catalogue
   (``CONFORMANCE_DIAGNOSIS_EXCLUDE=M``), as for a bug the catalogue does not know. Right is naming
   nothing, or only mutants that behave exactly like M there; anything else is a *false naming*: a
   wrong bug named with the confidence of a match.

Then every failing check of the leave-one-out run is put in one class: *named* (a same-output mutant, a
structural pattern or another likely cause), *described* (a measured description, ``descriptions`` in the JSON:
``correct`` when one contains every word M declares in ``expected.toml``'s ``described``, or every word of one of
its ``alternatives`` (other phrasings of the same statement, where a held-out set gives them); ``true`` when one
contains a phrase of its ``consequences``, another effect of the bug measured; ``false`` otherwise), or
*unexplained*. A mutant is *described* when one of its failing checks carries a correct description. With
``CONFORMANCE_DESCRIBE=0`` the descriptions are off: the "before" of the same table. The totals also give that
"before" from the same run, each check classified with its descriptions set aside: a description is measured only
where no name, pattern or likely cause was found, so setting it aside leaves what the run said without them.

``--heldout`` certifies the bugs of ``tests/heldout/`` (written apart from the catalogue, in other styles; each
declares its words in ``tests/heldout/expected.toml``) with the whole catalogue: a name is right when it is one
the file accepts (``named``: the same deviation written otherwise), else false; descriptions are scored as above.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import time
import tomllib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

SAME = 1e-6  # max abs diff under which two mutants' outputs on a check's input are the same behaviour
HELDOUT = Path(__file__).resolve().parents[1] / "tests" / "heldout"


def certify(name: str, *args: str, exclude: str = "") -> dict:
    """The JSON report of ``certify <name> --no-training`` run in this process (``mutant:<name>`` for a mutant)."""
    from conformance.cli import main
    from conformance.diagnosis import EXCLUDE_ENV

    os.environ[EXCLUDE_ENV] = exclude
    target = name if name.endswith(".py") else f"mutant:{name}"
    with tempfile_dir() as tmp:
        path = Path(tmp) / "report.json"
        with contextlib.redirect_stdout(io.StringIO()):
            main(["certify", target, "--no-training", "--json", str(path), *args])
        return json.loads(path.read_text())


def tempfile_dir():
    import tempfile

    return tempfile.TemporaryDirectory()


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


def contains(text: str, words) -> bool:
    return all(word.lower() in text.lower() for word in words)


def described(check: dict, wordsets, consequences) -> str | None:
    """"correct", "true" or "false" for a check's descriptions; None when it has none. ``wordsets``: the sets of
    words a correct statement holds (one set is enough: a held-out set's ``described`` and its ``alternatives``)."""
    texts = [d["text"] for d in check.get("descriptions") or []]
    if not texts:
        return None
    if any(words and contains(text, words) for text in texts for words in wordsets):
        return "correct"
    if all(any(phrase.lower() in text.lower() for phrase in consequences) for text in texts):
        return "true"
    return "false"


def explained_as_before(check: dict) -> bool:
    """The first table's "explained": a diagnosis or a likely cause, a measured description left out (the column
    as it was before the descriptions)."""
    cause = check.get("likely_cause") or ""
    return bool(check.get("diagnosis") or (cause and not cause.startswith("measured:")))


def explained_otherwise(check: dict) -> bool:
    """A name or a cause that is no measured description: a match, a structural pattern, a likely cause (the
    table's "explained" column, as it was before the descriptions)."""
    cause = check.get("likely_cause") or ""
    return bool(check.get("diagnosis") or check.get("patterns") or (cause and not cause.startswith("measured:")))


def classify(checks: list[dict], wordsets, consequences, *, names_ok) -> dict:
    """Per failing check: named, described (correct / true / false) or unexplained; and the false ones listed."""
    row = {"named": 0, "correct": 0, "true": 0, "false": [], "unexplained": 0, "false_names": [],
           "before_named": 0, "before_unexplained": 0}
    for check in checks:
        named = [match for match in check.get("diagnosis") or [] if not match.get("contradicted_by")]  # standing
        if named and not names_ok(named):
            row["false_names"].append(f"{check['id']}: {named[0]['mutant']}")
            continue
        row["before_named" if explained_otherwise(check) else "before_unexplained"] += 1
        verdict = described(check, wordsets, consequences)
        if verdict == "false":
            row["false"].append(f"{check['id']}: {check['descriptions'][0]['text']}")
        elif verdict:
            row[verdict] += 1
        elif explained_otherwise(check):
            row["named"] += 1
        else:
            row["unexplained"] += 1
    return row


def score(name: str) -> dict:
    """One mutant's row: diagnosed checks, in-catalogue hits, leave-one-out outcomes, leave-one-out descriptions."""
    from conformance.implementations import mutants

    torch_threads()
    declared = mutants.expected().get(name)
    words, consequences = (getattr(declared, "described", ()), getattr(declared, "consequences", ()))
    report = certify(name)
    failed = failing(report)
    diagnosed = {check["id"]: check["diagnosis"] for check in failed if check.get("diagnosis")}
    row = {"mutant": name, "failing": len(failed), "explained": sum(explained_as_before(c) for c in failed),
           "diagnosed": len(diagnosed), "self": 0, "same": 0, "wrong": [], "loo_nothing": 0, "loo_same": 0,
           "loo_false": [], "words": bool(words)}
    for check_id, named in diagnosed.items():
        verdict = right(named, name)
        if verdict:
            row[verdict] += 1
        else:
            row["wrong"].append(f"{check_id}: {named[0]['mutant']}")
    started = time.perf_counter()
    rerun = certify(name, exclude=name) if failed else {"checks": []}
    row["loo_s"] = time.perf_counter() - started
    loo = {check["id"]: check for check in rerun["checks"]}
    for check_id in diagnosed:
        named = (loo.get(check_id) or {}).get("diagnosis") or []
        if not named:
            row["loo_nothing"] += 1
        elif all(match["max_abs"] <= SAME for match in named):
            row["loo_same"] += 1
        else:
            row["loo_false"].append(f"{check_id}: {named[0]['mutant']}")
    row.update(classify(failing(rerun), [words], consequences,
                        names_ok=lambda named: all(match["max_abs"] <= SAME for match in named)))
    row["descriptions"] = sorted({d["text"] for c in failing(rerun) for d in c.get("descriptions") or []})
    return row


def score_heldout(path: str) -> dict:
    """One held-out bug's row: certified with the whole catalogue (it holds none of them)."""
    torch_threads()
    table = tomllib.loads((Path(path).parent / "expected.toml").read_text()).get(Path(path).stem, {})
    words, consequences, accepted = table.get("described", ()), table.get("consequences", ()), table.get("named", ())
    wordsets = [words, *table.get("alternatives", ())]  # any one set of words identifies a correct statement
    started = time.perf_counter()
    report = certify(path, "--no-isolate")
    checks = failing(report)
    row = {"mutant": Path(path).stem, "failing": len(checks), "loo_s": time.perf_counter() - started,
           "words": bool(words)}
    row.update(classify(checks, wordsets, consequences,
                        names_ok=lambda named: all(part in accepted for m in named
                                                   for part in (m.get("mutants") or [m["mutant"]]))))
    row["descriptions"] = sorted({d["text"] for c in checks for d in c.get("descriptions") or []})
    row["statements"] = statements(checks)
    return row


def statements(checks: list[dict]) -> dict[str, list[str]]:
    """Per failing check, everything the report claims of the bug (names, patterns, likely cause, descriptions):
    what a judge who reads the bug's source, not the diagnosis, decides is a correct statement or not."""
    said = {}
    for check in checks:
        lines = [f"{'withdrawn (a passing check contradicts it)' if m.get('contradicted_by') else 'named'}:"
                 f" {' + '.join(m.get('mutants') or [m['mutant']])}" for m in check.get("diagnosis") or []]
        lines += [f"pattern: {p if isinstance(p, str) else p.get('text', p)}" for p in check.get("patterns") or []]
        if check.get("likely_cause"):
            lines.append(f"likely cause: {check['likely_cause']}")
        lines += [f"described: {d['text']}" for d in check.get("descriptions") or []]
        said[check["id"]] = lines
    return said


def score_in_a_process(name: str, script: str, heldout: bool = False) -> dict:
    """On a Dask worker: ``score(name)`` (``score_heldout`` for a held-out bug's path) in a fresh process of this
    script (``--row``): a certify per process, as under ``--jobs``, and none in a worker's thread. The workers read
    the script and the held-out files at the client's paths."""
    from conformance.run.cluster import dies_with

    held_out = ["--heldout", str(Path(name).parent), Path(name).stem]
    command = [sys.executable, script, "--row", *(held_out if heldout else [name])]
    done = subprocess.run(command, capture_output=True, text=True, preexec_fn=dies_with(os.getpid()))
    if done.returncode != 0:
        raise RuntimeError(f"scoring {name} exited with {done.returncode}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def score_on_cluster(address: str, names: list[str], *, heldout: bool = False) -> list[dict]:
    from conformance.run.cluster import as_they_finish

    script = str(Path(__file__).resolve())
    rows = {}
    tasks = {Path(name).stem: (name, script, heldout) for name in names}
    for key, row in as_they_finish(address, score_in_a_process, tasks):
        if isinstance(row, BaseException):
            raise row
        rows[key] = row
        print(f"[{len(rows)}/{len(names)}] {key}", file=sys.stderr, flush=True)
    return [rows[Path(name).stem] for name in names]


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


def render_descriptions(rows: list[dict], title: str) -> str:
    """Per bug: its failing checks named / described (correct, true, false) / unexplained; then the totals, by
    check and by bug (a bug is described when one of its checks carries a correct description)."""
    head = (f"{title:<38} {'failing':>7} {'named':>6} {'correct':>7} {'true':>5} {'false':>5} {'unexpl.':>7}"
            f" {'bug':>10}")
    lines = [head]
    for r in rows:
        verdict = "described" if r["correct"] else "named" if r["named"] else "-" if not r["failing"] else \
            "unexplained"
        lines.append(f"{r['mutant']:<38} {r['failing']:>7} {r['named']:>6} {r['correct']:>7} {r['true']:>5}"
                     f" {len(r['false']):>5} {r['unexplained']:>7} {verdict:>10}")
        lines += [f"    false description: {w}" for w in r["false"]]
        lines += [f"    false name: {w}" for w in r["false_names"]]
        if r["failing"] and not r["correct"]:
            lines += [f"    measured: {text}" for text in r["descriptions"][:3]]
    total = {key: sum(r[key] if isinstance(r[key], int) else len(r[key]) for r in rows)
             for key in ("failing", "named", "correct", "true", "false", "unexplained", "false_names",
                         "before_named", "before_unexplained")}
    bugs = [r for r in rows if r["failing"]]
    described_bugs = sum(1 for r in bugs if r["correct"])
    named_bugs = sum(1 for r in bugs if not r["correct"] and r["named"])
    named_before = sum(1 for r in bugs if r["before_named"])
    lines += [
        "",
        f"checks: {total['failing']} failing: named {total['named']}, described {total['correct'] + total['true']}"
        f" (correct {total['correct']}, another true effect {total['true']}), unexplained {total['unexplained']};"
        f" false descriptions {total['false']}, false names {total['false_names']}",
        f"bugs: {len(bugs)} failing: described {described_bugs} ({pct(described_bugs, len(bugs))}), otherwise named"
        f" {named_bugs}, unexplained {len(bugs) - described_bugs - named_bugs}",
        f"the same checks with their descriptions set aside (before): named {total['before_named']}, unexplained"
        f" {total['before_unexplained']}; bugs named {named_before}, unexplained {len(bugs) - named_before}",
        f"diagnosis time of the reruns: {sum(r['loo_s'] for r in rows):.0f} s",
    ]
    return "\n".join(lines)


def cache_state() -> str:
    """Whether the catalogue's answers came from earlier runs: a warm cache makes the wall time no measure of
    the diagnosis's cost (CONFORMANCE_CACHE=0 turns it off)."""
    from conformance.diagnosis import answer_cache

    return f"answer cache in {answer_cache.cache_root()}" if answer_cache.enabled() else "answer cache off"


def main(argv: list[str] | None = None) -> int:
    from conformance.implementations import mutants
    from conformance.run.cluster import scheduler_address

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="mutants (or held-out bugs) to score (default: all)")
    parser.add_argument("--jobs", type=int, default=1, help="bugs scored in parallel processes")
    parser.add_argument("--scheduler", metavar="ADDRESS", type=scheduler_address,
                        help="score on a Dask cluster, one task per bug: tcp://HOST:PORT or local:N")
    parser.add_argument("--heldout", nargs="?", const=str(HELDOUT), metavar="FOLDER",
                        help="score the held-out bugs of FOLDER (default tests/heldout/), as its expected.toml says")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--row", action="store_true", help=argparse.SUPPRESS)  # one bug's row as JSON (a task)
    args = parser.parse_args(argv)
    if args.heldout:
        folder = Path(args.heldout)
        paths = [str(folder / f"{name}.py") for name in args.names] or sorted(
            str(p) for p in folder.glob("[!_]*.py"))
        fn, items = score_heldout, paths
    else:
        fn, items = score, args.names or mutants.names()
    if args.row:
        print(json.dumps(fn(items[0])))
        return 0
    started = time.perf_counter()
    if args.scheduler:
        rows = score_on_cluster(args.scheduler, items, heldout=args.heldout)
    elif args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            rows = list(pool.map(fn, items))
    else:
        rows = [fn(item) for item in items]
    if not args.heldout:
        print(render(rows))
        print()
    print(render_descriptions(rows, "held-out bug" if args.heldout else "leave-one-out"))
    print(f"wall time: {time.perf_counter() - started:.0f} s ({cache_state()};"
          f" descriptions {'off' if os.environ.get('CONFORMANCE_DESCRIBE') == '0' else 'on'})")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
