"""Several known bugs at once: the catalogue's mutants composed into one candidate.

Real code deviates in several places at once; ``matching.combined_matches`` asks such compositions the
failing question when no single mutant answers like the candidate. Which mutants compose, and how, is the
catalogue's own declaration: ``mutants.compose`` (``implementations/mutants/_compose.py``) builds one adapter
with every bug, or answers None. Here each composition becomes a named candidate, cached by its sorted names.
"""

from __future__ import annotations

import dataclasses
import functools

from conformance.diagnosis.catalogue import KnownBug, every_known_bug, named
from conformance.implementations import mutants

SEPARATOR = "+"  # a combination's name: its mutants' names, sorted, joined ("a+b")


def combination_name(names) -> str:
    return SEPARATOR.join(sorted(names))


@dataclasses.dataclass(frozen=True)
class Combination:
    names: tuple[str, ...]  # sorted
    bug: str  # the bugs' first lines, joined
    candidate: object  # a conformance.boundary.candidate.Candidate

    @property
    def name(self) -> str:
        return combination_name(self.names)


def combined_bug(bugs: list[str]) -> str:
    """"<bug a>; and <bug b>": each bug's own first line, without its full stop (they contain "+" themselves)."""
    return "; and ".join(bug.rstrip(".") for bug in bugs)


@functools.cache
def combination(names: tuple[str, ...]) -> Combination | None:
    """The catalogue's mutants ``names`` (sorted) composed into one candidate, or None when they do not
    compose (or one of them is not in the catalogue)."""
    from conformance.boundary.candidate import Candidate

    by_name = {known.name: known for known in every_known_bug()}
    if len(set(names)) != len(names) or not all(name in by_name for name in names):
        return None
    known: list[KnownBug] = [by_name[name] for name in names]
    label = combination_name(names)
    if not all(hasattr(bug.candidate, "adapter") for bug in known):
        return None  # a stand-in catalogue (tests): nothing to compose
    adapter = mutants.compose([bug.candidate.adapter for bug in known], f"mutant:{label}")
    if adapter is None:
        return None
    return Combination(tuple(names), combined_bug([bug.bug for bug in known]),
                       named(Candidate(adapter, name=f"mutant:{label}", timeout_s=None), f"mutant:{label}"))


def combine(*names: str) -> Combination | None:
    """``combination`` for names in any order."""
    return combination(tuple(sorted(names)))
