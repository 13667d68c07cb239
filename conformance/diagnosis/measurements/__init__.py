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

from conformance.diagnosis.measurements.base import (  # noqa: F401 - the package's names
    COMPOSITE,
    DESCRIBE_ENV,
    MEASUREMENTS,
    Finding,
    Knob,
    Measurement,
    as_description,
    enabled,
    measured,
    measurement,
)

COUNTS = {"parameter_count"}  # the questions a sum of components' sizes explains before any formula


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
        sensitivity,
        smoothing,
    )

    return list(MEASUREMENTS)


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


def describe(candidate, question, tol, *, disk_cache: bool = True) -> list[dict]:
    """The descriptions of a failing question that no known bug explains: refitted formulas that reproduce the
    candidate's answer, then what the answer itself shows, then the probed invariances of the parts it calls."""
    if not enabled() or question is None:
        return []
    from conformance.diagnosis.measurements.confirm import Asked

    asked = Asked.of(candidate, question, tol, disk_cache=disk_cache)
    if asked is None:
        return []
    from conformance.diagnosis.measurements.misread import misread_weights
    from conformance.diagnosis.neighbourhood.search import formula_differences

    def read_off():
        return [as_description(name, "answer", finding.text, finding.key, facts=finding.facts)
                for name, finding in _answers(candidate, asked)]

    if asked.collapsed:  # a constant answer: said only by a measurement that found the part itself constant
        return asked.refitted([knob for knob in knobs_of(candidate, asked.parts) if knob.facts.get("constant")])
    found = asked.refitted(knobs_of(candidate, asked.parts))
    if not found and asked.parts <= COUNTS:  # a count: its components' sizes say more than a formula's arithmetic
        found = read_off() or formula_differences(asked)
    if not found:  # a neighbour of the paper's formulas, generated, confirmed on a third problem
        found = formula_differences(asked)
    if not found:  # the paper's formulas on the weights or inputs as the candidate reads them
        found = misread_weights(asked)
    if not found:  # a formula that reproduces the answer says more than a reading of the answer
        found = read_off()
    found = [{**d, "text": asked.said_of_the_part(d["text"])} for d in found]
    keys, side = {d["key"] for d in found}, _side(asked.question)
    for name, finding in findings_of(candidate, asked.parts):
        if finding.facts.get("side", side) != side:  # the decoder's reading said of the encoder's memory, or back
            continue
        if finding.key not in keys and set(finding.parts) & asked.parts:
            keys.add(finding.key)
            found.append(as_description(name, "probe", finding.text, finding.key, facts=finding.facts))
    return found


def _side(question) -> str | None:
    """"encoder" for a question about the memory alone, "decoder" for one about decode with the paper's memory, None
    for the whole model (the question's function says so: ``side``)."""
    answer = question.answer
    return getattr(getattr(answer, "func", answer), "side", None)


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
