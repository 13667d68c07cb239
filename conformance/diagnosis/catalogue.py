"""The catalogue of known bugs: every module of ``implementations/mutants/``, loaded as a candidate.

Leave-one-out: ``CONFORMANCE_DIAGNOSIS_EXCLUDE=name1,name2`` removes mutants, so that
``benchmarks/diagnosis_accuracy.py`` can check that nothing wrong is named when the right answer is missing.
A mutant that cannot be loaded here (it needs torch, and torch is not installed) is left out: the
diagnosis of a NumPy or JAX candidate runs on the mutants built on the NumPy implementation.
"""

from __future__ import annotations

import functools
import importlib
import os
from dataclasses import dataclass
from typing import Any

EXCLUDE_ENV = "CONFORMANCE_DIAGNOSIS_EXCLUDE"


@dataclass(frozen=True)
class KnownBug:
    name: str  # the mutant's module name, as ``mutant:<name>`` and in deviation files
    bug: str  # the first line of its docstring
    candidate: Any  # a conformance.boundary.candidate.Candidate


@functools.cache
def _loaded(dtype: str | None = None) -> tuple[KnownBug, ...]:
    """Every mutant as a candidate; in a half dtype, each switched to it (``with_dtype``): a half-precision bug
    shows only there, and a mutant that cannot compute in it answers nothing (not implemented). Without one, the
    mutants with a half dtype's table (``half_*``) are left out."""
    from conformance.boundary.candidate import Candidate
    from conformance.boundary.isolation.frameworks import switch_dtype
    from conformance.implementations import mutants

    loaded = []
    half_only = {name for name, table in mutants.expected().items() if table.dtypes}
    for name in mutants.names():
        if dtype is None and name in half_only:
            continue  # a half-precision bug: in float32 faithful, or another mutant's twin (an additive -1e9 fill)
        try:
            module = importlib.import_module(f"conformance.implementations.mutants.{name}")
        except ImportError:  # a torch-based mutant without torch
            continue
        bug = (module.__doc__ or name).strip().splitlines()[0]
        adapter = module.adapter if dtype is None else switch_dtype(module.adapter, dtype)
        member = f"mutant:{name}" if dtype is None else f"mutant:{name}@{dtype}"  # its answers kept apart on disk
        loaded.append(KnownBug(name, bug, named(Candidate(adapter, name=f"mutant:{name}", timeout_s=None,
                                                          dtype=dtype), member)))
    return tuple(loaded)


def catalogue_dtype(candidate) -> str | None:
    """The dtype the catalogue answers a candidate in: its half dtype, or None (each mutant's own)."""
    from conformance.tolerances import HALF

    dtype = getattr(getattr(candidate, "conventions", None), "dtype", None)
    return dtype if dtype in HALF else None


# A member's name keys its answers on disk (``answer_cache``), and travels on the member itself. Only the
# candidates built here are named: a stand-in catalogue (tests) has no names, so nothing it answers is kept
# beyond the process.
MEMBER_NAME = "catalogue_name"


def named(candidate, name: str):
    """Mark ``candidate`` as the catalogue member ``name`` (a mutant, a combination "a+b", the paper)."""
    if candidate is not None:
        setattr(candidate, MEMBER_NAME, name)
    return candidate


def catalogue_name(candidate) -> str | None:
    """The name ``named`` gave this candidate, or None when it is not a member of the catalogue. Read from the
    candidate's own attributes: a wrapper that forwards attribute reads (a recorder) is not the member."""
    name = getattr(candidate, "__dict__", {}).get(MEMBER_NAME)
    return name if isinstance(name, str) else None


def excluded() -> set[str]:
    return {name for name in os.environ.get(EXCLUDE_ENV, "").split(",") if name}


def every_known_bug(dtype: str | None = None) -> tuple[KnownBug, ...]:
    """The whole catalogue, the mutants a leave-one-out measurement leaves out included (a combination is
    built from any of them; ``known_bugs`` says which the diagnosis asks)."""
    return _loaded() if dtype is None else _loaded(dtype)


def known_bugs(dtype: str | None = None) -> list[KnownBug]:
    """The catalogue (in ``dtype``: ``catalogue_dtype``), less the mutants left out for a leave-one-out
    measurement."""
    skip = excluded()
    return [known for known in (_loaded() if dtype is None else _loaded(dtype)) if known.name not in skip]


@functools.cache
def paper(dtype: str | None = None):
    """The candidate that computes the paper's model: the reference, or the NumPy implementation without torch; in
    a half ``dtype`` (``catalogue_dtype``), the reference in it. A known bug that answers as the paper does in the
    candidate's dtype says nothing: in bfloat16 every mutant whose bug does not touch the question gives the
    half-precision reference's answer, not float32's."""
    from conformance.boundary.loading import load

    for name in ("reference", "numpy"):
        try:
            return named(load(name, dtype=dtype), f"paper:{name}" if dtype is None else f"paper:{name}@{dtype}")
        except Exception:  # noqa: BLE001 - the reference needs torch
            continue
    return None


@functools.cache
def numpy_paper():
    """The NumPy implementation (float64), which the NumPy mutants are built on: loaded once, None when absent."""
    from conformance.boundary.loading import load

    try:
        return named(load("numpy"), "paper:numpy")
    except Exception:  # noqa: BLE001 - a stand-in catalogue may have no NumPy implementation to load
        return None
