"""Descriptions from measurements: what a failing implementation computes, when no known bug matches.

The catalogue names only what it holds; a bug it does not hold gets, at best, a place ("first divergence:
encoder.0"). A *measurement* asks the candidate, and the paper, a question on purpose-built problems and reports
what it measured, in words: a constant of the paper's formulas refitted from the candidate's own outputs
("attention scores scaled by d_k^-1, not d_k^-0.5"), an invariance that holds where it should not or fails where
it should ("the logits at position t change when a later target token changes"), where non-finite values
appear and which input makes them, a parameter count as a sum of the components' sizes. The registry
(``MEASUREMENTS``) is a small set of such questions, not a list of bugs: each fits or probes one formula or one
property, whatever the bug behind it.

Four kinds, each confirmed on a second, non-degenerate problem like any name (``degenerate``):

* ``refit``: reads one formula off the candidate's part (its attention weights, its table, its rates) and, when
  the part fits the paper's formula with other constants, returns them as a knob of the *neighbouring formula*
  (``diagnosis.neighbour``). The neighbour with every knob is then asked the failing question, like a known bug:
  described only when it answers as the candidate on the failing problem and on the second one, where it
  differs from the paper. Each knob that takes part is one description ("refitted").
* ``probe``: an invariance, measured once per candidate on two purpose-built problems of different sizes (found
  on both, never on the paper); it describes the failing checks whose question calls the part it probed.
* ``answer``: reads the failing answer itself against the paper's, on the failing problem and the second one (the
  answer is the paper's times d_model^-0.5; it differs only at padded positions).
* ``error``: for a part whose output is not finite (the check ends in an error before any comparison), where the
  non-finite values fall and which purpose-built input makes them (``nonfinite``, called by the plugin).

Measured only for a failing check that no known bug (or combination) explains, so a catalogue name is never
displaced; ``CONFORMANCE_DESCRIBE=0`` turns the descriptions off (the benchmarks' "before").
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


def registry() -> list[Measurement]:
    """Every measurement, its modules imported."""
    from conformance.diagnosis.measurements import (  # noqa: F401 - each module registers its measurements
        answers,
        attention,
        feed_forward,
        invariances,
        layer_norm,
        model,
        nonfinite,
        positional,
        schedule,
        smoothing,
    )

    return list(MEASUREMENTS)


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


def knobs_of(candidate, called: set | None = None) -> list[Knob]:
    """The knobs the refit measurements fitted on this candidate, of the formulas a question that calls
    ``called`` reads (every one when None); each measured once per candidate."""
    return [knob for item in registry() if item.kind == "refit" and (called is None or item.describes(called))
            for knob in measured(candidate, item)]


def findings_of(candidate, called: set | None = None) -> list[tuple[str, Finding]]:
    """(measurement, finding) of this candidate about the parts a question that calls ``called`` calls itself (a
    layer's invariance describes the layer's questions, the model's the model's)."""
    return [(item.name, found) for item in registry() if item.kind == "probe"
            and (called is None or set(item.reads or item.parts) & called) for found in measured(candidate, item)]


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


def describe(candidate, question, tol) -> list[dict]:
    """The descriptions of a failing question that no known bug explains: refitted formulas that reproduce the
    candidate's answer, then what the answer itself shows, then the probed invariances of the parts it calls."""
    if not enabled() or question is None:
        return []
    from conformance.diagnosis.measurements.confirm import Asked

    asked = Asked.of(candidate, question, tol)
    if asked is None:
        return []
    found = asked.refitted(knobs_of(candidate, asked.parts))
    if not found:  # a formula that reproduces the answer says more than a reading of the answer
        found = [as_description(name, "answer", finding.text, finding.key, facts=finding.facts)
                 for name, finding in _answers(candidate, asked)]
    keys = {d["key"] for d in found}
    for name, finding in findings_of(candidate, asked.parts):
        if finding.key not in keys and set(finding.parts) & asked.parts:
            keys.add(finding.key)
            found.append(as_description(name, "probe", finding.text, finding.key, facts=finding.facts))
    return found


def _answers(candidate, asked) -> list[tuple[str, Finding]]:
    """(measurement, finding) of every answer measurement that reads something in this question's answers."""
    found = []
    for item in registry():
        if item.kind == "answer" and all(candidate.provides(part) for part in item.parts):
            try:
                finding = item.run(asked)
            except Exception:  # noqa: BLE001 - an answer that cannot be read describes nothing
                finding = None
            if finding is not None:
                found.append((item.name, finding))
    return found
