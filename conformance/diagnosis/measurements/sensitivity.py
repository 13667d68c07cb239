"""Per-weight sensitivity: what the candidate's model reads that the paper's does not, what it ignores that the
paper's reads, and which weight's effect stands out.

For a model-only adapter, the one way in is ``load_weights``. Each canonical weight tensor is changed in turn
(scaled by 1.5, shifted by 0.1: every entry moves) and the candidate's logits at real positions are compared
with their own before the change, as the oracle's are with the oracle's. A weight whose change moves the
oracle's logits and not the candidate's is *ignored*; one that moves the candidate's and not the oracle's is
*read against the paper*; and where the other weights' responses are the paper's size (within 20 % on the
median), a weight whose response is more than twice or less than half the paper's *stands out*, when those that do
are of one sublayer. Each finding
must hold on the two model sizes of the invariance probes (``invariances.SIZES``), and names the weights by
their canonical names, grouped by layer and sublayer.
"""

from __future__ import annotations

import numpy as np

from conformance.diagnosis.measurements.base import Finding, measurement
from conformance.diagnosis.measurements.invariances import MODEL_PARTS, SIZES, Pair, _with_weights

STANDS_OUT = 2.0  # a response this many times the paper's (or its inverse) stands out
TYPICAL = 0.2  # ... when the median response of the other weights is within this of the paper's


def responses(pair: Pair) -> dict[str, tuple[float, float]]:
    """{weight: (the candidate's response, the oracle's)}: the largest move of the logits at real positions."""
    before = (np.asarray(pair.model.forward(pair.src, pair.tgt_in), np.float64),
              np.asarray(pair.oracle.forward(pair.src, pair.tgt_in), np.float64))
    real = pair.tgt_keep
    found = {}
    for name, value in pair.weights.items():
        moved = {**pair.weights, name: value * 1.5 + 0.1}
        after = _with_weights(pair, moved, "forward", pair.src, pair.tgt_in)
        found[name] = tuple(float(np.abs(np.asarray(a, np.float64) - b)[real].max())
                            for a, b in zip(after, before, strict=True))
    return found


def classify(pair: Pair) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(ignored, read against the paper, standing out) weight names of one problem."""
    found = responses(pair)
    floor = 1e-5 * pair.scale
    ignored = tuple(n for n, (mine, theirs) in found.items() if theirs > floor and mine <= floor)
    extra = tuple(n for n, (mine, theirs) in found.items() if mine > floor and theirs <= floor)
    ratios = {n: mine / theirs for n, (mine, theirs) in found.items() if mine > floor and theirs > floor}
    out: tuple[str, ...] = ()
    if len(ratios) > 4:
        median = float(np.median(list(ratios.values())))
        if abs(median - 1.0) <= TYPICAL:
            out = tuple(n for n, r in ratios.items() if r > STANDS_OUT or r < 1 / STANDS_OUT)
    return ignored, extra, out


def grouped(names: tuple[str, ...]) -> str:
    """"decoder.0.cross_attn.W_Q, b_Q; decoder.1.cross_attn.W_Q": the leaves of one sublayer together."""
    by_sublayer: dict[str, list[str]] = {}
    for name in names:
        prefix, _, leaf = name.rpartition(".")
        by_sublayer.setdefault(prefix, []).append(leaf)
    return "; ".join(f"{prefix + '.' if prefix else ''}{', '.join(leaves)}" for prefix, leaves in by_sublayer.items())


TEXTS = {
    "ignored": "the logits do not change when {w} change: the candidate does not read them (the paper's model does)",
    "extra": "the logits change when {w} change: the candidate reads them (the paper's model does not)",
    "out": "the logits respond to {w} more than twice or less than half as much as the paper's, while the other"
           " weights' effects are the paper's size (their median within 20 %)",
}
# Weights that stand out in several sublayers point at no sublayer: a model that reads something else (another
# embedding row, another position) moves every weight's effect a little, and a few of them past 2x by chance.
MOST_SUBLAYERS_OUT = 1


@measurement("weight_sensitivity", "probe", (*MODEL_PARTS, "model.load_weights", "model.forward"),
             "weights the candidate does not read, reads against the paper, or whose effect stands out",
             reads=("build_model",))
def weight_sensitivity(candidate):
    try:
        pairs = [Pair(candidate, size) for size in SIZES]
    except Exception:  # noqa: BLE001 - no model to probe, or one that answers twice differently
        return []
    try:
        each = [classify(pair) for pair in pairs]
    except Exception:  # noqa: BLE001 - a model that cannot load every weight describes nothing here
        return []
    found = []
    for i, kind in enumerate(("ignored", "extra", "out")):
        names = tuple(n for n in each[0][i] if all(n in other[i] for other in each[1:]))  # found at both sizes
        if kind == "out" and len({n.rpartition(".")[0] for n in names}) > MOST_SUBLAYERS_OUT:
            continue
        if names:
            found.append(Finding(TEXTS[kind].format(w=grouped(names)) + " (probed on two model sizes)",
                                 f"weight_sensitivity:{kind} {','.join(names)}", MODEL_PARTS,
                                 {"probe": kind, "weights": list(names)}))
    return found
