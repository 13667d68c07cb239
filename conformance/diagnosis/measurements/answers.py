"""The failing answer read against the paper's, on the failing problem and the second one.

* A scale: the candidate's answer is the paper's times one number c (least squares, exact), the same law at both
  problems: a constant, or a power of a size (d_model^-0.5 when d_model differs between the two).
* A transform: the paper's answer through a log-softmax or a softmax over its last axis, or with its last two
  axes swapped. Whatever else differs: rows that are (log-)probabilities where the paper's are not normalised.
* Where: the entries that differ, against the padding of the problem's inputs: only the padded positions (the
  real ones are the paper's), or only the rows that have padding.
* A parameter count: the difference from the paper's as a sum of the components' sizes (``diagnosis.counts``),
  the same terms giving the difference at the second size.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from conformance.diagnosis.measurements.base import Finding, measurement


def _sizes(problem) -> dict[str, float]:
    """The sizes a law may be written in: those of a layer or model problem."""
    from conformance.problems.scenarios import LayerSizes, ModelSizes

    if isinstance(problem, LayerSizes):
        return {"d_model": problem.d_model, "d_k": problem.d_k, "h": problem.h, "d_ff": problem.d_ff}
    if isinstance(problem, ModelSizes):
        c = problem.config
        return {"d_model": c.d_model, "d_k": c.d_model // c.h, "h": c.h, "d_ff": c.d_ff, "V": c.tgt_vocab}
    return {}


def _ratio(mine, paper) -> float | None:
    mine, paper = np.asarray(mine, np.float64), np.asarray(paper, np.float64)
    if mine.shape != paper.shape:
        return None
    denominator = float((paper * paper).sum())
    return float((paper * mine).sum()) / denominator if denominator else None


def scale_law(c1: float, c2: float, problem, second) -> str | None:
    """A constant, or size^a with the same a at both problems."""
    if c1 <= 0 or c2 <= 0:
        return f"{c1:.4g}" if abs(c1 - c2) <= 1e-6 * abs(c1) else None
    if abs(c1 - c2) <= 1e-5 * abs(c1):
        return f"{c1:.4g}"
    first, other = _sizes(problem), _sizes(second)
    for name, size in first.items():
        size2 = other.get(name)
        if not size2 or size == size2 or size <= 1 or size2 <= 1:
            continue
        a1, a2 = math.log(c1) / math.log(size), math.log(c2) / math.log(size2)
        if abs(a1 - a2) < 1e-3:
            a = round(a1 * 4) / 4 if abs(a1 * 4 - round(a1 * 4)) < 4e-3 else a1
            return f"{name}^{a:g}"
    return None


@measurement("answer_scale", "answer", (), "the answer is the paper's times <c or size^a>")
def answer_scale(asked):
    c1, c2 = _ratio(asked.mine, asked.paper), _ratio(asked.mine_second, asked.paper_second)
    if c1 is None or c2 is None or abs(c1 - 1) < 1e-6:
        return None
    if not (asked.same(asked.mine, c1 * asked.paper) and asked.same(asked.mine_second, c2 * asked.paper_second)):
        return None
    law = scale_law(c1, c2, asked.problem, asked.second)
    if law is None:
        return None
    return Finding(f"the answer is the paper's multiplied by {law} ({c1:.4g} here, {c2:.4g} on the second problem)",
                   f"answer_scale:{law}", (), {"factor": law})


def _log_softmax(x):
    x = np.asarray(x, np.float64)
    shifted = x - x.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


TRANSFORMS = {
    "log_softmax": (_log_softmax, "the answer is log_softmax of the paper's over its last axis (log-probabilities"
                                  " where the logits are asked for)"),
    "softmax": (lambda x: np.exp(_log_softmax(x)), "the answer is softmax of the paper's over its last axis"
                                                  " (probabilities where the logits are asked for)"),
    "transposed": (lambda x: np.swapaxes(np.asarray(x), -1, -2), "the answer is the paper's with its last two axes"
                                                                 " swapped (transposed)"),
}


@measurement("answer_transform", "answer", (), "the answer is log_softmax / softmax of the paper's; transposed")
def answer_transform(asked):
    for name, (transform, text) in TRANSFORMS.items():
        try:
            here, there = transform(asked.paper), transform(asked.paper_second)
        except Exception:  # noqa: BLE001 - a transform that does not apply to this answer's shape
            continue
        if asked.same(asked.mine, here) and asked.same(asked.mine_second, there):
            return Finding(text, f"answer_transform:{name}", (), {"transform": name})
    return None


def _log_probabilities(x) -> bool:
    """Every row (the last axis, at least 2 long) a distribution's logarithm: its logsumexp is 0."""
    x = np.asarray(x, np.float64)
    if x.ndim < 2 or x.shape[-1] < 2 or not np.isfinite(x).all():
        return False
    top = x.max(-1, keepdims=True)
    return bool(np.abs(np.log(np.exp(x - top).sum(-1)) + top[..., 0]).max() <= 1e-4)


def _probabilities(x) -> bool:
    """Every row (the last axis, at least 2 long) a distribution: non-negative, summing to 1."""
    x = np.asarray(x, np.float64)
    return bool(x.ndim >= 2 and x.shape[-1] >= 2 and np.isfinite(x).all() and (x >= 0).all()
                and np.abs(x.sum(-1) - 1).max() <= 1e-4)


NORMALISED = {
    "log_probabilities": (_log_probabilities, "every row of the answer is log-probabilities (its logsumexp over the"
                                              " last axis is 0, on both problems) where the paper's is not"
                                              " normalised: a log_softmax on the output (the logits are asked for)"),
    "probabilities": (_probabilities, "every row of the answer is probabilities (non-negative, summing to 1 over the"
                                      " last axis, on both problems) where the paper's is not normalised: a softmax"
                                      " on the output (the logits are asked for)"),
}


@measurement("answer_normalised", "answer", (),
             "every row of the answer is log-probabilities / probabilities where the paper's is not normalised")
def answer_normalised(asked):
    """What the answer's rows are, whatever else differs: a normalisation the paper's answer does not have (a
    log_softmax on the output beside other deviations, which ``answer_transform`` cannot see)."""
    papers = [answer for answer in (asked.paper, asked.paper_second) if answer is not None]
    for name, (holds, text) in NORMALISED.items():
        if holds(asked.mine) and holds(asked.mine_second) and papers and not any(holds(p) for p in papers):
            if name == "log_probabilities" and all(_probabilities(p) for p in papers):
                name, text = "log_of_probabilities", LOG_OF_PROBABILITIES
            return Finding(text, f"answer_normalised:{name}", (), {"normalised": name})
    return None


# Where the paper's answer is itself a softmax (attention weights), log-probabilities are its logarithm's kind: the
# log_softmax stands where the softmax does, not after logits.
LOG_OF_PROBABILITIES = ("every row of the answer is log-probabilities (its logsumexp over the last axis is 0, on both"
                        " problems) where the paper's rows are probabilities: a log_softmax in place of the softmax")


def _padding(asked, problem, answer) -> np.ndarray | None:
    """The (B, L) keep mask of the inputs the answer's first two axes run along, when the problem has one."""
    from conformance.problems import questions
    from conformance.problems.scenarios import ModelSizes

    if not isinstance(problem, ModelSizes) or np.ndim(answer) < 2:
        return None
    _, src, tgt_in = questions.model_problem(problem)
    pad = problem.config.pad_id
    for ids in (tgt_in, src):
        if np.shape(answer)[:2] == ids.shape and "build_model" in asked.parts:
            return ids != pad
    return None


def _where(asked, problem, mine, paper) -> str | None:
    keep = _padding(asked, problem, mine)
    if keep is None or keep.all():
        return None
    mine, paper = np.asarray(mine, np.float64), np.asarray(paper, np.float64)
    scale = max(1.0, float(np.abs(paper).max()))
    differs = (np.abs(mine - paper).reshape(*keep.shape, -1).max(-1) > 1e-3 * scale)
    if not differs.any():
        return None
    if not (differs & keep).any():
        return "padded"
    rows = keep.all(-1)
    if not differs[rows].any():
        return "rows"
    return None


@measurement("answer_where", "answer", (),
             "only the outputs at padded positions differ (the real ones are the paper's); only the rows with padding")
def answer_where(asked):
    first, second = _where(asked, asked.problem, asked.mine, asked.paper), \
        _where(asked, asked.second, asked.mine_second, asked.paper_second)
    if first is None or first != second:
        return None
    text = {"padded": "only the outputs at padded positions differ from the paper's (every real position is the"
                      " paper's)",
            "rows": "only the sentences that have padding differ from the paper's (the unpadded sentence is the"
                    " paper's, at every position)"}[first]
    return Finding(f"{text}, on both problems", f"answer_where:{first}", (), {"where": first})


@measurement("parameter_count", "answer", ("parameter_count",),
             "difference <n> = <terms> (a sum of the components' sizes; the same terms at a second size)")
def parameter_count(asked):
    from conformance.config import ModelConfig
    from conformance.diagnosis.counts import (
        confirmed_at_third,
        explain_count,
        explain_more,
        explain_sizes,
        terms_of,
        third_size,
        variant_differences,
    )

    if not isinstance(asked.problem, ModelConfig) or not isinstance(asked.second, ModelConfig):
        return None
    got, probe_got = int(round(float(asked.mine))), int(round(float(asked.mine_second)))
    third = asked.candidate.fit(third_size(asked.second))
    third_got = int(round(float(asked.question.ask(asked.candidate, third))))
    # One component at another size is one term: tried before sums of several, which a coincidence can fit too
    # (a hard-coded d_ff of 64 on d_model 2 is also biases + norms + 273 rows of positions, at both sizes). Each
    # sum must hold at a third size too: two sizes leave room for coincidences.
    variants = variant_differences(lambda config: float(asked.question.ask(asked.candidate, config)), asked.problem,
                                   asked.candidate.fit)
    text = None
    for explain in (explain_sizes, functools.partial(explain_count, variants=variants),
                    functools.partial(explain_more, variants=variants)):
        text = confirmed_at_third(explain, asked.problem, got, asked.second, probe_got, third, third_got)
        if text is not None:
            break
    if text is None:
        return None
    terms = terms_of(text)
    return Finding(f"parameter count {text}", f"parameter_count:{terms}", ("parameter_count",),
                   {"difference": got - _paper_count(asked.problem)})


def _paper_count(config) -> int:
    from conformance.weights import parameter_count

    return parameter_count(config)


def _end(row: np.ndarray, eos: int) -> int:
    """Index just after a row's first </s>, or its length."""
    hits = np.flatnonzero(row == eos)
    return int(hits[0]) + 1 if hits.size else len(row)


def _decoding(mine, paper, eos: int = 2, pad: int = 0) -> str | None:
    """How a decoding differs from the paper's, when every row is the paper's up to a point: "goes on" (each row
    the paper's up to its </s>, then more tokens where the paper pads), or "cut" (every row the paper's, cut at
    the step where the first row to end ends)."""
    mine, paper = np.asarray(mine), np.asarray(paper)
    if mine.ndim != 2 or paper.ndim != 2 or len(mine) != len(paper) or mine.dtype.kind not in "iuf":
        return None
    ends = [_end(row, eos) for row in paper]
    if mine.shape == paper.shape and all(np.array_equal(m[:e], p[:e]) for m, p, e in zip(mine, paper, ends,
                                                                                          strict=True)):
        after = [m[e:] for m, e in zip(mine, ends, strict=True)]
        if any((rest != pad).any() for rest in after):
            return "goes on"
    first = min(ends)
    if mine.shape[1] == first < paper.shape[1] and np.array_equal(mine, paper[:, :first]):
        return "cut"
    return None


@measurement("answer_decoding", "answer", (), "each row is the paper's up to its </s>, then goes on; every row cut"
             " where the first row to end ends")
def answer_decoding(asked):
    first = _decoding(asked.mine, asked.paper)
    if first is None or first != _decoding(asked.mine_second, asked.paper_second):
        return None
    text = {"goes on": "each decoded row is the paper's up to its </s>, then goes on with more tokens where the paper"
                       " pads: a row is not stopped at </s>",
            "cut": "every decoded row is the paper's, cut at the step where the first row to end ends: the batch"
                   " stops when one row has produced </s>"}[first]
    return Finding(f"{text} (on both problems)", f"answer_decoding:{first}", (), {"decoding": first})
