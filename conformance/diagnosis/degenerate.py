"""Answers that are no evidence: a match on them names nothing, and a description built on them says nothing.

An output that is constant (a decoding of nothing but padding), not finite (all NaN), or that takes only one or
two values where the paper's answer takes many, equals the answer of many different bugs, and of none in
particular: every broken implementation that collapses collapses the same way. So neither a known bug nor a
measured description is confirmed on such an answer, whatever the max diff (0 on both problems, for a decoding
that returns only padding, against every mutant that also returns only padding).

The rule is applied where the evidence is: the second problem, built to show what the failing one may not. The
failing problem is drawn, not chosen, and can be too small for any answer to be more than degenerate (a single
query, whose weight is 1 under every softmax; a LayerNorm of gamma 1 and beta 0 with gamma and beta swapped);
a match there is named only when the second problem's answer, which is not degenerate, confirms it.
"""

from __future__ import annotations

import numpy as np

FEW = 2  # at most this many distinct values, where the paper's answer has more, is too few to tell bugs apart
SIGNIFICANT = 6  # values equal to this many significant digits count as one value (float32 rounding)


def distinct_values(answer) -> int:
    """How many different values ``answer`` holds, to ``SIGNIFICANT`` significant digits."""
    values = np.asarray(answer, np.float64).ravel()
    if not values.size:
        return 0
    finite = values[np.isfinite(values)]
    rounded = finite.copy()
    nonzero = finite != 0
    scale = 10.0 ** np.floor(np.log10(np.abs(finite[nonzero])))
    rounded[nonzero] = np.round(finite[nonzero] / scale, SIGNIFICANT - 1) * scale
    return int(np.unique(rounded).size) + int(finite.size < values.size)


def degenerate(answer, paper=None) -> str | None:
    """Why ``answer`` is no evidence of any particular bug, or None when it is. ``paper``: the paper's answer to
    the same question, when known: an answer is judged against it (a question whose right answer is all zeros,
    a fully masked row's weights, is not degenerate for being constant)."""
    if answer is None:
        return "no answer"
    values = np.asarray(answer, np.float64)
    if not values.size:
        return "an empty answer"
    if not np.isfinite(values).all():
        bad = int((~np.isfinite(values)).sum())
        return f"non-finite values ({bad} of {values.size})"
    if values.size < 2:
        return None  # a scalar (a loss, a count) is judged by its value alone
    paper_distinct = None if paper is None else distinct_values(paper)
    distinct = distinct_values(values)
    if distinct == 1 and (paper_distinct is None or paper_distinct > 1):
        return f"a constant ({float(values.flat[0]):.6g} everywhere)"
    if paper_distinct is not None and distinct <= FEW < paper_distinct:
        return f"only {distinct} distinct values where the paper's answer has {paper_distinct}"
    return None
