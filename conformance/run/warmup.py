"""What a run of the checks imports, imported ahead: a process that forks runs (``grade DIR``'s graders,
``watch``'s reruns) pays the imports once, and each fork starts with them.

Not the checks' modules: their ``@settings`` take the hypothesis profile that each run loads, at their import.
"""

from __future__ import annotations

import contextlib
import importlib

# torch, pytest and its plugins, hypothesis, and the suite's run, diagnosis and renderers
RUN_MODULES = (
    "torch", "numpy", "hypothesis", "hypothesis.strategies", "hypothesis.extra.numpy", "pytest", "pygments",
    "conformance.run.session", "conformance.run.plugin", "conformance.run.report", "conformance.judging.check",
    "conformance.judging.training", "conformance.judging.twins", "conformance.problems.oracle",
    "conformance.diagnosis.matching", "conformance.diagnosis.localise", "conformance.diagnosis.ablation",
    "conformance.implementations.reference.model", "conformance.implementations.mutants",
    "conformance.boundary.isolation.proxy", "conformance.reports.formats",
)


def import_ahead(*more: str) -> None:
    """Import ``RUN_MODULES``, pytest's default plugins, and ``more``."""
    from _pytest.config import default_plugins

    for name in (*RUN_MODULES, *(f"_pytest.{plugin}" for plugin in default_plugins), *more):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
