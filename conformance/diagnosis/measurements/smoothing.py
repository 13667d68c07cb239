"""§5.4 read off the candidate's loss: the target distribution it smooths towards, the constant it adds, how it
reduces over tokens.

For one token the loss is -sum_k q_k log p_k + c, linear in log p: asked at V + 2 random logits, a least-squares
solve gives the target q the candidate uses and the constant c (0 for a cross-entropy, -H(q) for a KL
divergence). q's right-token, wrong-token and padding-column masses, measured at two (V, eps), are written as
laws: eps / (V - k) on each wrong token, the rest on the right one. Two tokens together against each alone say
whether the loss is a mean or a sum, and a padding target whether padding counts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from conformance.diagnosis.measurements.base import Knob, measurement

CONFIGS = ((7, 0.1), (11, 0.2))
RIGHT, PAD = 2, 0


@dataclass(frozen=True)
class SmoothingLaw:
    k: int  # each wrong token gets eps / (V - k) (the paper: 0)
    pad_zero: bool  # the padding column gets 0
    right_rest: bool  # the right token gets 1 - eps + one wrong share (the paper), else 1 - eps exactly
    kl: bool  # minus the entropy of q
    reduction: str  # "mean" over the real targets (the paper), "sum", "mean over every target"
    epsilon_used: bool = True  # False: no smoothing at all

    def target(self, targets, V, epsilon, pad_id):
        eps = epsilon if self.epsilon_used else 0.0
        share = eps / (V - self.k) if V - self.k else 0.0
        q = np.full((len(targets), V), share)
        if self.pad_zero and 0 <= pad_id < V:
            q[:, pad_id] = 0.0
        q[np.arange(len(targets)), targets] = 1.0 - eps + (share if self.right_rest else 0.0)
        return q


PAPER = SmoothingLaw(0, False, True, False, "mean")


def read_target(candidate, V: int, eps: float, seed: int):
    """(q, c): the target distribution and the constant of one token's loss (right token RIGHT, pad_id PAD)."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 2, (V + 3, V))
    losses = np.array([float(candidate.label_smoothed_loss(row[None], np.array([RIGHT]), eps, PAD)) for row in logits])
    shifted = logits - logits.max(-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    design = np.concatenate([-log_p, np.ones((len(logits), 1))], axis=1)
    solution, *_ = np.linalg.lstsq(design, losses, rcond=None)
    if np.abs(design @ solution - losses).max() > 1e-4 * max(1.0, float(np.abs(losses).max())):
        return None
    return solution[:-1], float(solution[-1])


def read_reduction(candidate, V: int, eps: float, seed: int) -> str | None:
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 2, (2, V))

    def loss(rows, targets):
        return float(candidate.label_smoothed_loss(logits[rows], np.array(targets), eps, PAD))

    first, second, both = loss([0], [RIGHT]), loss([1], [RIGHT + 1]), loss([0, 1], [RIGHT, RIGHT + 1])
    with_pad = loss([0, 1], [RIGHT, PAD])
    padded_alone = _pad_token_loss(logits[1], V, eps)
    mean_real = abs(both - (first + second) / 2) <= 1e-5 * abs(both)
    summed = abs(both - (first + second)) <= 1e-5 * abs(both)
    if mean_real and abs(with_pad - first) <= 1e-5 * abs(first):
        return "mean"
    if summed and abs(with_pad - first) <= 1e-5 * abs(first):
        return "sum"
    if mean_real and padded_alone is not None and abs(with_pad - (first + padded_alone) / 2) <= 1e-3 * abs(with_pad):
        return "mean over every target"
    return None


def _pad_token_loss(logits, V, eps):
    """Roughly what a candidate that counts padding adds for a padded target: the smoothed cross-entropy with
    the padding token as the right one (its exact target is the candidate's own; read_target confirms)."""
    return None if logits is None else float(-(np.full(V, eps / V) + (1 - eps) * (np.arange(V) == PAD))
                                           @ (logits - np.log(np.exp(logits).sum())))


def fit_smoothing(candidate) -> SmoothingLaw | None:
    laws = set()
    for i, (V, eps) in enumerate(CONFIGS):
        read = read_target(candidate, V, eps, 31 + i)
        if read is None:
            return None
        q, c = read
        wrong = np.delete(q, [RIGHT, PAD])
        if np.ptp(wrong) > 1e-5:
            return None
        share, pad_mass, right = float(wrong.mean()), float(q[PAD]), float(q[RIGHT])
        used = share > 1e-6
        k = round(V - eps / share) if used else 0
        pad_zero = used and abs(pad_mass) < 1e-6
        right_rest = abs(right - (1 - eps + share)) < 1e-5 if used else True
        if used and abs(right - (1 - eps)) >= 1e-5 and not right_rest:
            return None
        entropy = float(-(q[q > 0] * np.log(q[q > 0])).sum())
        kl = abs(c + entropy) < 1e-4 and abs(c) > 1e-4
        if not kl and abs(c) > 1e-4:
            return None
        laws.add((k, pad_zero, right_rest, kl, used))
    if len(laws) != 1:
        return None
    k, pad_zero, right_rest, kl, used = laws.pop()
    reduction = read_reduction(candidate, 7, 0.1, 41)
    if reduction is None:
        return None
    return SmoothingLaw(k, pad_zero, right_rest, kl, reduction, used)


def texts(law: SmoothingLaw) -> list[str]:
    found = []
    if not law.epsilon_used:
        found.append("no label smoothing: the target is the right token alone whatever eps (paper: eps / V on every"
                     " token)")
    elif law.k or law.pad_zero or not law.right_rest:
        share = "eps / V" if not law.k else f"eps / (V {'-' if law.k > 0 else '+'} {abs(law.k)})"
        pad = "; 0 on the padding column" if law.pad_zero else ""
        right = "" if law.right_rest else "; exactly 1 - eps on the right token"
        found.append(f"the target puts {share} on each wrong token{pad}{right} (paper: eps / V on every token,"
                     " 1 - eps + eps / V on the right one)")
    if law.kl:
        found.append("the loss is a KL divergence: the cross-entropy less the entropy of the target q")
    if law.reduction == "sum":
        found.append("the loss is summed over the target tokens, not averaged")
    elif law.reduction != "mean":
        found.append("the loss averages over every target, padding included")
    return found


@measurement("smoothing", "refit", ("label_smoothed_loss",),
             "the target puts eps / (V - <k>) on each wrong token; no label smoothing; a KL divergence; summed over"
             " tokens; padding averaged in")
def smoothing(candidate):
    law = fit_smoothing(candidate)
    if law is None or law == PAPER:
        return []
    found = texts(law)
    facts = {"k": law.k, "pad_zero": law.pad_zero, "right_rest": law.right_rest, "kl": law.kl,
             "reduction": law.reduction, "smoothing": law.epsilon_used}
    key = "smoothing:" + ",".join(f"{k}={v}" for k, v in facts.items())
    return [Knob("smoothing", law, "label smoothing refitted from the candidate's losses: " + "; ".join(found), key,
                 facts)]
