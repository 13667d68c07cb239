"""Where a ``certify`` run's time goes, measured only when asked (``benchmarks/catalogue.py`` reads it).

    CONFORMANCE_PROFILE=phases.json transformer-conformance certify reference --no-training

With the variable unset nothing here is imported or wrapped: a normal run pays nothing. With it set,
``cli.main`` starts a clock, wraps the functions that mark each phase, and writes the totals to the file:

    imports          every ``import`` statement run after main started (torch, pytest, hypothesis, lazy imports)
    loading          ``loading.load``: the implementation imported, validated, its worker started; and, isolated,
                     the wait for the worker's hello (its imports) after collection
    collection       pytest's collection of the checks (their modules' own imports count as imports)
    hypothesis_checks, plain_checks
                     a check's setup, call, teardown and classification, less what falls in a phase below;
                     property checks (``@given``) apart from the others
    candidate_calls  ``Candidate.call``: the implementation's own code (in its worker, when isolated)
    oracle_calls     ``oracle`` and ``formulas``: what the paper computes, in float64
    diagnosis        ``Check.explain``: the known bugs rerun, the divergence located (everything inside it but
                     import statements, the mutants' calls included, is the diagnosis's)
    report           the report built, rendered to the terminal, the JSON file and the other renderings
    other            the rest: argument parsing, pytest's start-up and configuration, the session's own work

Each moment is counted once, in the innermost phase running, so the phases add up to the run's wall time
from ``main`` on (``wall_s``); ``main_started`` (seconds since the epoch) lets a caller that knows when it
started the process add the interpreter's start. Per check: its total and its share of each phase.
Serial runs, in the CLI's process: with ``--workers`` the checks run in other processes and count as other.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import inspect
import json
import threading
import time
from pathlib import Path

PHASES = ("imports", "loading", "collection", "hypothesis_checks", "plain_checks", "candidate_calls",
          "oracle_calls", "diagnosis", "report", "other")
ABSORBING = ("diagnosis",)  # a diagnosis reruns mutants through Candidate.call: that is the diagnosis's cost


class Phases:
    """A stack of running phases; the time between two changes goes to the phase on top."""

    def __init__(self):
        self.totals = dict.fromkeys(PHASES, 0.0)
        self.stack = ["other"]
        self.started = self.mark = time.perf_counter()
        self.thread = threading.get_ident()  # other threads (a worker's reader) would scramble the stack

    def enter(self, phase: str) -> bool:
        if threading.get_ident() != self.thread:
            return False
        top = self.stack[-1]
        self._charge(top)
        self.stack.append(top if top in ABSORBING and phase != "imports" else phase)
        return True

    def leave(self) -> None:
        self._charge(self.stack.pop())

    def _charge(self, phase: str) -> None:
        now = time.perf_counter()
        self.totals[phase] += now - self.mark
        self.mark = now

    def snapshot(self) -> dict[str, float]:
        self._charge(self.stack[-1])
        return dict(self.totals)

    @contextlib.contextmanager
    def running(self, phase: str):
        entered = self.enter(phase)
        try:
            yield
        finally:
            if entered:
                self.leave()


def timed(phases: Phases, phase: str, fn):
    """``fn`` counted as ``phase`` while it runs."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        entered = phases.enter(phase)
        try:
            return fn(*args, **kwargs)
        finally:
            if entered:
                phases.leave()

    return wrapper


def wrap_attribute(owner, name: str, phases: Phases, phase: str) -> None:
    setattr(owner, name, timed(phases, phase, getattr(owner, name)))


def public_functions(module) -> list[str]:
    return [name for name, value in vars(module).items()
            if inspect.isfunction(value) and value.__module__ == module.__name__ and not name.startswith("_")]


def install(phases: Phases) -> None:
    """Wrap the functions that mark the phases. Import statements first, so the imports below count too;
    the rest are looked up as module attributes when called, so the wrappers are what the run calls."""
    builtins.__import__ = timed(phases, "imports", builtins.__import__)
    from conformance.boundary import loading
    from conformance.boundary.candidate import Candidate
    from conformance.judging import check
    from conformance.paper import formulas
    from conformance.problems import oracle
    from conformance.reports import formats, json_report, terminal
    from conformance.run import plugin, session

    wrap_attribute(loading, "load", phases, "loading")
    from conformance.boundary.isolation.proxy import ProxyAdapter

    wrap_attribute(ProxyAdapter, "wait", phases, "loading")  # an isolated worker's hello, awaited after collection
    wrap_attribute(Candidate, "call", phases, "candidate_calls")
    for module in (oracle, formulas):
        for name in public_functions(module):
            wrap_attribute(module, name, phases, "oracle_calls")
    for name in ("__init__", "encoder_states", "decoder_states", "logits_from_states", "greedy_decode"):
        wrap_attribute(oracle.OracleModel, name, phases, "oracle_calls")
    wrap_attribute(check.Check, "explain", phases, "diagnosis")
    wrap_attribute(plugin.ResultCollector, "report", phases, "report")
    for owner, name in ((terminal, "render"), (json_report, "render"), (formats, "write"),
                        (session, "write_renderings")):
        wrap_attribute(owner, name, phases, "report")


def make_plugin(phases: Phases):
    """The pytest side: collection, each check (with its kind and status), per check totals."""
    import pytest

    from conformance.run.plugin import RESULTS_KEY, check_id

    class PhasePlugin:
        def __init__(self):
            self.checks: list[dict] = []
            self.statuses: dict[str, str] = {}

        # Old-style wrappers: pytest >= 7.4 is supported, whose pluggy may predate wrapper=True.
        @pytest.hookimpl(hookwrapper=True)
        def pytest_collection(self, session):
            with phases.running("collection"):
                yield

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_protocol(self, item, nextitem):
            is_property = getattr(getattr(item, "obj", None), "hypothesis", None) is not None
            kind = "hypothesis_checks" if is_property else "plain_checks"
            with phases.running(kind):
                before = phases.snapshot()
                yield
                after = phases.snapshot()
            shares = {p: round(after[p] - before[p], 6) for p in PHASES if after[p] > before[p]}
            self.checks.append({"id": check_id(item), "kind": kind, "status": self.statuses.get(item.nodeid),
                                "total_s": round(sum(shares.values()), 6), "phases": shares})

        def pytest_runtest_logreport(self, report):
            for key, value in report.user_properties:
                if key == RESULTS_KEY:
                    self.statuses[report.nodeid] = value["status"]

    return PhasePlugin()


def profiled(path: str, command) -> int:
    """Run ``command(plugin)`` with the phases timed, and write them to ``path`` (JSON). ``plugin`` is the pytest
    side of the profile: the command hands it to its runs of the checks (``Run.plugins``)."""
    started, phases = time.time(), Phases()
    install(phases)
    plugin = make_plugin(phases)
    try:
        return command(plugin)
    finally:
        totals = phases.snapshot()
        Path(path).write_text(json.dumps({
            "main_started": started,
            "wall_s": round(phases.mark - phases.started, 6),
            "phases": {p: round(s, 6) for p, s in totals.items()},
            "checks": plugin.checks,
        }, indent=1))
