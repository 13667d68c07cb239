"""Conversions from how real code reports its loss and schedules its rate to what the protocol asks.

The protocol's loss (``label_smoothed_loss``, ``train_step``'s ``loss``) is the **mean over non-padding
targets of the cross-entropy against the smoothed target** q = (1 - eps) one_hot + eps / V: PyTorch's
``nn.CrossEntropyLoss(ignore_index=pad_id, label_smoothing=eps)``, the lesson's loss. Code that
returns a KL divergence (``nn.KLDivLoss`` against q, as the annotated transformer does) or a sum over
tokens converts with the functions below; the conversion is exact, so a wrong loss stays wrong.

The protocol counts steps from 1 (``lrate(1)`` is the first update's rate). ``LambdaLR`` calls its
function with the number of scheduler steps already taken, from 0: the lesson writes
``LambdaLR(opt, lambda s: lrate(s + 1, 64, 400))``.

A conversion is never silent: each converter notes what it converted (``conformance.provenance``), and the
report shows it. A KL divergence or a sum over tokens is the implementation's own convention, not the lessons':
a check of the loss that passes only through the conversion is reported as that declared deviation
(``label_smoothing_as_kl_divergence``, ``label_smoothing_summed_over_tokens``), never as a plain pass. Reading
a LambdaLR factor from 0 is LambdaLR's counting, which the lesson itself writes: noted, not a deviation.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from conformance.provenance import note_conversion


def smoothed_target_entropy(vocab: int, epsilon: float) -> float:
    """H(q) for q = (1 - eps) one_hot + eps / V: the smoothed loss's floor (0.537 for V = 13, eps = 0.1)."""
    right, other = 1.0 - epsilon + epsilon / vocab, epsilon / vocab
    return -sum(p * math.log(p) * n for p, n in ((right, 1), (other, vocab - 1)) if p > 0)


def target_entropy(target) -> float:
    """The mean entropy of the rows of a smoothed target (N, V) as the implementation built it: 0 log 0 = 0."""
    q = np.asarray(target, dtype=np.float64).reshape(-1, np.shape(target)[-1])
    if not len(q):
        raise ValueError("no target rows: the entropy of none is undefined")
    return float(-np.where(q > 0, q * np.log(np.where(q > 0, q, 1.0)), 0.0).sum(-1).mean())


def cross_entropy_from_kl(kl: float, vocab: int, epsilon: float, *, target=None) -> float:
    """A mean KL(q || p) per token -> the protocol's mean smoothed cross-entropy: CE(q, p) = KL(q || p) + H(q).

    ``target``: the implementation's own smoothed target, the rows (N, V) its KL was averaged over; its mean
    entropy is added, so that the converted loss is the cross-entropy against the target the code really built.
    Pass it: a target that is not PyTorch's (eps / (V - 2) with a zero padding column, say) then converts to that
    target's cross-entropy, which the suite compares with the formula's and names as the known bug it is. Without
    it, H(q) of the paper's q is added (exact only when the code's q is the paper's)."""
    if target is None:
        entropy, whose = smoothed_target_entropy(vocab, epsilon), "the paper's q"
    else:
        entropy, whose = target_entropy(target), "the implementation's own q"
    note_conversion("cross_entropy_from_kl", "reported_loss", f"a KL divergence, + H(q) = {entropy:.6g} ({whose})",
                    deviation="label_smoothing_as_kl_divergence")
    return float(kl) + entropy


def mean_from_sum(total: float, targets, pad_id: int, *, counted: int | None = None) -> float:
    """A loss summed over tokens -> the mean (``targets`` (N,) or (B, T)).

    ``counted``: how many tokens the implementation's sum ran over, when that is not the non-padding targets
    (the paper's): a sum that also ran over the padding converts to that code's mean, which the suite names."""
    count = int((np.asarray(targets) != pad_id).sum()) if counted is None else int(counted)
    if count == 0:
        raise ValueError("every target is padding: the mean over none is undefined")
    which = "non-padding targets" if counted is None else "tokens the implementation summed over"
    note_conversion("mean_from_sum", "reported_loss", f"a sum over {count} {which}, divided by {count}",
                    deviation="label_smoothing_summed_over_tokens")
    return float(total) / count


def rate_from_lambda_lr(factor: Callable[[int], float], step: int, base_lr: float = 1.0) -> float:
    """The rate a ``LambdaLR(optimizer, factor)`` (with ``lr=base_lr``) gives the protocol's ``step`` (from 1):
    ``base_lr * factor(step - 1)``, since LambdaLR calls ``factor`` with 0 before the first update."""
    if step < 1:
        raise ValueError(f"the protocol counts steps from 1, got {step}")
    note_conversion("rate_from_lambda_lr", "schedule", "a LambdaLR factor read at step - 1 (LambdaLR counts from 0)"
                    + ("" if base_lr == 1.0 else f", times the base rate {base_lr:g}"))
    return base_lr * factor(step - 1)
