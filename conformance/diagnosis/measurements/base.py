"""The pieces every measurement shares: what it returns (``Knob``, ``Finding``), how it registers
(``measurement``), how it is taken once per candidate (``measured``), and a description as the report lists it.

The modules of this package import these; the package itself imports the modules (``registry``).
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

DESCRIBE_ENV = "CONFORMANCE_DESCRIBE"


def enabled() -> bool:
    return os.environ.get(DESCRIBE_ENV, "1") != "0"


@dataclass(frozen=True)
class Knob:
    """A refitted formula: ``name`` is what the neighbour reads (``neighbour.KNOB_NAMES``), ``law`` computes it."""

    name: str
    law: object
    text: str  # what was measured, in words
    key: str  # a stable identity for the profile: the same deviation in every check
    facts: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Finding:
    """A measured property of the candidate, with the parts whose questions it describes."""

    text: str
    key: str
    parts: tuple[str, ...]  # a failing question that calls one of these is described by it
    facts: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Measurement:
    """One question asked on purpose: ``run`` returns knobs (refit) or findings (probe) for a candidate, or a
    finding for one failing question (answer). ``parts``: what the candidate must provide to be measured."""

    name: str
    kind: str  # "refit", "probe", "answer" or "error"
    parts: tuple[str, ...]
    emits: str  # the words it emits (documentation, docs/mutants.md)
    run: Callable
    reads: tuple[str, ...] = ()  # the parts whose questions it can describe (default: ``parts``)

    def describes(self, called: set) -> bool:
        """Whether a question that calls ``called`` can be described by this measurement: one that calls a layer
        or a model reads every formula; one that calls a part, that part's."""
        return bool(called & COMPOSITE) or bool(set(self.reads or self.parts) & called)


COMPOSITE = {"encoder_layer", "decoder_layer", "attention_sublayer", "ffn_sublayer", "build_model"}
MEASUREMENTS: list[Measurement] = []


def measurement(name: str, kind: str, parts: tuple[str, ...], emits: str, *, reads: tuple[str, ...] = ()):
    """Register the decorated function as a measurement."""

    def register(fn: Callable) -> Callable:
        MEASUREMENTS.append(Measurement(name, kind, parts, emits, fn, reads))
        return fn

    return register


# What was measured of each candidate, once: refit knobs and probe findings, by measurement name.
_MEASURED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def measured(candidate, item: Measurement) -> list:
    """``item.run(candidate)``, once per candidate; nothing when the candidate lacks a part or the run fails."""
    found = _MEASURED.setdefault(candidate, {})
    if item.name not in found:
        found[item.name] = _run(candidate, item)
    return found[item.name]


def _run(candidate, item: Measurement) -> list:
    try:
        if not all(candidate.provides(part) for part in item.parts):
            return []
        return list(item.run(candidate) or [])
    except Exception:  # noqa: BLE001 - a measurement that cannot be taken describes nothing
        return []


def as_description(item: str, kind: str, text: str, key: str, *, max_abs=None, probe_max_abs=None,
                   facts=None) -> dict:
    """A description as the report lists it (``descriptions`` of a check)."""
    return {"measurement": item, "kind": kind, "text": text, "key": key,
            "max_abs": None if max_abs is None else float(max_abs),
            "probe_max_abs": None if probe_max_abs is None else float(probe_max_abs),
            "facts": {k: _plain(v) for k, v in (facts or {}).items()}}


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value
