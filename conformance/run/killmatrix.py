"""The suite's power, measured: run every check against every mutant and tabulate what is caught.

A mutant is *killed* when at least one check fails or errors on it. ``implementations/mutants/expected.toml``
declares the exact checks that must (``caught_by`` failed, ``errored`` errored, ``advisory`` advisory: a
convention of the suite it breaks, which does not count as a kill).
The matrix shows, per mutant and check, a catch it declares (``x``), a declared catch that did not
happen (``!``), an undeclared catch (``+``), a pass (``.``), and a check that did not run (blank). Per mutant, the
published numbers it reproduces (``coverage.reproduced``), and the mutants only published numbers catch: every check
that kills them failed on published numbers alone (the facts it names as not reproduced), none on a claim of its own.

Which checks run: every mutant is certified with ``--no-training``, except the training mutants
(``training = true``), which only training can catch: they also run the training checks that take a
few updates each (the learning rate used, the reported loss, the Adam steps, dropout at evaluation).
With ``--training`` every mutant runs every check, the convergence run and what depends on it included.
With ``--scheduler`` each mutant is one task on a Dask cluster (``conformance/run/cluster.py``): ``certify mutant:NAME``
with the same checks, in a process of its own on a worker.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field

from conformance.implementations import mutants
from conformance.results import FAILING, CheckResult
from conformance.run.cluster import as_they_finish, run_conformance, task_failure

CAUGHT = ("failed", "error", "advisory")  # advisory: a suite convention the mutant breaks (docs/claims.md)
# The checks that need the full convergence run (minutes per mutant): only with --training.
CONVERGENCE = (
    "reversal_task_is_learned",
    "smoothed_loss_approaches_its_floor_from_above",
    "greedy_decoding_reverses_cabed",
    "last_layer_cross_attention_reads_mirrored_positions",
    "top_probabilities_stay_near_the_smoothed_target",
)
WITHOUT_CONVERGENCE = "not (" + " or ".join(CONVERGENCE) + ")"


@dataclass
class MutantRow:
    name: str
    bug: str
    expected: set[str]
    training: bool = False
    convention_only: bool = False  # declared advisory alone: it breaks a convention of the suite, no claim of the paper
    caught: set[str] = field(default_factory=set)
    ran: set[str] = field(default_factory=set)

    killing: set[str] = field(default_factory=set)  # the catches that count against conformance (failed, error)
    published: tuple[int, int] = (0, 0)  # (reproduced, asked): the published numbers it reproduces
    missed_facts: dict[str, set[str]] = field(default_factory=dict)  # killing check -> the facts it names as missed

    @property
    def killed(self) -> bool:
        return bool(self.killing)

    @property
    def advised(self) -> bool:
        """A convention-only mutant advised on as declared: not a kill (the paper does not forbid it), not a
        survivor either (``--strict`` counts the advice against conformance)."""
        return self.convention_only and not self.killed and bool(self.caught) and not self.missed

    @property
    def only_published(self) -> set[str]:
        """The facts that alone catch it: when every check that kills it failed on published numbers it names (an
        aggregate of a section's printed numbers), those numbers; else none."""
        if not self.killing or any(not self.missed_facts.get(check) for check in self.killing):
            return set()
        return set().union(*self.missed_facts.values())

    @property
    def missed(self) -> set[str]:
        """Declared catches among the checks that ran, that did not happen."""
        return (self.expected & self.ran) - self.caught

    @property
    def unexpected(self) -> set[str]:
        return self.caught - self.expected


def catalogue(dtype: str | None = None) -> list[MutantRow]:
    """One row per mutant: its bug (the first docstring line) and its declared catches (expected.toml); with a half
    ``dtype``, the mutants that have a table for it (``[name.float16]``), with that table's catches."""
    declared = mutants.expected()
    # a half-precision bug that float32 does not show (no catch there) is a row of its dtype's matrix alone
    tables = {name: declared[name] for name in mutants.names()
              if declared[name].caught or not declared[name].dtypes} if dtype is None else \
        {name: declared[name].dtypes[dtype] for name in mutants.names() if dtype in declared[name].dtypes}
    return [MutantRow(name, mutants.bug(name), set(table.caught), table.training,
                      convention_only=not (table.caught_by or table.errored))
            for name, table in tables.items()]


def tabulate(rows: list[MutantRow], results) -> list[MutantRow]:
    from conformance.run.coverage import reproduced

    by_impl = {f"mutant:{row.name}": row for row in rows}
    for result in results:
        row = by_impl.get(result.impl)
        if row is None:
            continue
        row.ran.add(result.id)
        if result.status in CAUGHT:
            row.caught.add(result.id)
        if result.status in FAILING:
            row.killing.add(result.id)
            row.missed_facts[result.id] = set(result.facts_missed)
    for impl, row in by_impl.items():
        row.published = reproduced([result for result in results if result.impl == impl])
    return rows


def cell(row: MutantRow, check: str) -> str:
    if check not in row.ran:
        return " "
    if check in row.caught:
        return "x" if check in row.expected else "+"
    return "!" if check in row.expected else "."


def render_matrix(rows: list[MutantRow], checks: list[str]) -> list[str]:
    """One line per mutant, one column per check (numbered; the legend below names them)."""
    width = max(len(row.name) for row in rows)
    tens = "".join(str(i // 10 % 10) if i % 10 == 0 else " " for i in range(1, len(checks) + 1))
    units = "".join(str(i % 10) for i in range(1, len(checks) + 1))
    lines = [f"{'':<{width}}  {tens}", f"{'mutant':<{width}}  {units}"]
    lines += [f"{row.name:<{width}}  {''.join(cell(row, check) for check in checks)}" for row in rows]
    lines.append("x caught as declared, + caught but not declared, ! declared but passed, . passed, blank not run")
    lines += [f"{i:>3} {check}" for i, check in enumerate(checks, 1)]
    return lines


def render(rows: list[MutantRow], checks: list[str] | None = None) -> str:
    checks = checks if checks is not None else sorted(set().union(*(row.ran for row in rows)))
    lines = render_matrix(rows, checks) + ["", f"{'mutant':<40} {'caught by':>9}  {'missed':>6}  {'extra':>5}"
                                                f"  {'published':>9}  bug"]
    for row in rows:
        status = "KILLED  " if row.killed else "ADVISED " if row.advised else "SURVIVED"
        published = f"{row.published[0]}/{row.published[1]}"
        lines.append(f"{row.name:<40} {len(row.caught):>9}  {len(row.missed):>6}  {len(row.unexpected):>5}"
                     f"  {published:>9}  {status} {row.bug}")
        lines += [f"    ! declared but passed: {check}" for check in sorted(row.missed)]
        lines += [f"    + also caught by: {check}" for check in sorted(row.unexpected)]
    killed, advised = sum(row.killed for row in rows), [row.name for row in rows if row.advised]
    breaking = len(rows) - len(advised)  # the mutants that break a claim of the paper or a lesson
    lines += ["", f"kill rate: {killed}/{breaking} = {killed / max(breaking, 1):.1%}"
              + (f" (and {len(advised)} convention-only mutants advised on: {', '.join(advised)})" if advised else "")]
    survivors = [row.name for row in rows if not (row.killed or row.advised)]
    lines.append("survivors: " + (", ".join(survivors) if survivors else "none"))
    only = [f"{row.name} ({', '.join(sorted(row.only_published))})" for row in rows if row.only_published]
    lines.append("caught only by published numbers: " + ("; ".join(only) if only else "none"))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------
# The run: every mutant through the suite, in pytest sessions with every mutant as an --impl
# --------------------------------------------------------------------------------------------------


def run(args) -> bool:
    """Certify every mutant, print the kill matrix (and write ``args.json``); True when every mutant is
    killed and every declared catch happened."""
    import time
    from pathlib import Path

    started = time.perf_counter()
    dtype = getattr(args, "dtype", None)
    dtype = dtype if dtype in mutants.HALF_DTYPES else None  # float32 and float64: the catalogue's own tables
    rows = catalogue() if dtype is None else catalogue(dtype)
    results = []
    if getattr(args, "scheduler", None):
        results += on_cluster(args, rows)
    elif args.training:
        results += session(args, [row.name for row in rows], [])
    else:
        results += session(args, [row.name for row in rows if not row.training], [], no_training=True, dtype=dtype)
        training = [row.name for row in rows if row.training]
        if training:
            results += session(args, training, ["-k", WITHOUT_CONVERGENCE])
    rows = tabulate(rows, results)
    checks = list(dict.fromkeys(result.id for result in results))
    print(render(rows, checks), end="")
    print(f"wall time: {time.perf_counter() - started:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "mutants": [{"name": r.name, "bug": r.bug, "training": r.training, "declared": sorted(r.expected),
                         "caught": sorted(r.caught), "ran": sorted(r.ran), "published": list(r.published),
                         "only_published": sorted(r.only_published)} for r in rows],
            "results": [result.as_dict() for result in results],
        }, indent=1, default=str))
    return all((row.killed or row.advised) and not row.missed for row in rows)


def session(args, names: list[str], extra: list[str], *, no_training: bool = False, dtype: str | None = None) -> list:
    """The results of one pytest session that certifies every mutant of ``names``; ``extra``: pytest's options."""
    import contextlib
    import io

    import pytest

    from conformance.run.options import Options
    from conformance.run.plugin import ResultCollector
    from conformance.run.runs import Run
    from conformance.run.session import pytest_argv, workers_args

    # The matrix reads statuses alone: no failure is matched against the catalogue (a third of a failing run).
    run = Run([f"mutant:{name}" for name in names], Options(no_diagnosis=True, no_training=no_training, dtype=dtype))
    argv = pytest_argv("-q", "--tb=no", "--no-header", *extra)
    if args.workers > 1:
        # Without the convergence run no module needs to stay on one worker: idle workers take pending checks
        # from busy ones (a module over 86 mutants is minutes of work, and the modules differ tenfold).
        argv += workers_args(args.workers, "loadfile" if args.training else "worksteal")
    collector = ResultCollector()
    with contextlib.redirect_stdout(io.StringIO()):
        pytest.main(argv, plugins=[run, collector])
    if collector.config is None:
        raise RuntimeError("the kill-matrix session collected no results")
    return list(collector.results)


TASK_TIMEOUT_S = 4 * 3600  # one mutant's certify on a worker; with --training the convergence run is minutes


def certify_arguments(row: MutantRow, training: bool, dtype: str | None = None) -> list[str]:
    """One mutant's ``certify`` on a cluster's worker, with the checks ``run`` gives it in a local session."""
    checks = [] if training else ["-k", WITHOUT_CONVERGENCE] if row.training else ["--no-training"]
    return ["certify", f"mutant:{row.name}", "--no-diagnosis", "--progress", "off", *checks,
            *(["--dtype", dtype] if dtype else [])]


def on_cluster(args, rows: list[MutantRow]) -> list:
    """Every mutant certified by one task on the Dask cluster ``args.scheduler``; the results, the mutants
    without training first (as ``run`` orders its local sessions)."""
    dtype = getattr(args, "dtype", None)
    tasks = {row.name: (certify_arguments(row, args.training, dtype), TASK_TIMEOUT_S, os.getcwd()) for row in rows}
    found: dict[str, list] = {}
    for name, result in as_they_finish(args.scheduler, run_conformance, tasks):
        if isinstance(result, BaseException):
            raise RuntimeError(f"the kill matrix has no results for mutant:{name}: {task_failure(result)}")
        if result["report"] is None:
            raise RuntimeError(f"the kill matrix has no results for mutant:{name}: its certify on {result['host']}"
                               f" wrote no report; its output ends:\n{result['output'][-2000:]}")
        found[name] = [CheckResult.from_dict(check) for check in json.loads(result["report"])["checks"]]
        print(f"[{len(found)}/{len(rows)}] mutant:{name}", file=sys.stderr, flush=True)
    ordered = sorted(rows, key=lambda row: row.training and not args.training)
    return [result for row in ordered for result in found[row.name]]
