"""The catalogue's label-smoothing bugs behind each loss conversion, as real code reports its loss: a KL divergence
against its own smoothed target (the annotated transformer's ``nn.KLDivLoss``), converted with
``cross_entropy_from_kl(..., target=q)``; a sum over the tokens it counted, converted with
``mean_from_sum(..., counted=n)``. The conversions carry the code's own quantities, so each still answers as its
known bug does (tests/test_provenance.py). ``kl_<bug>`` and ``sum_<bug>`` for each bug of ``BUGS``."""

import dataclasses
import importlib

import numpy as np

from conformance.adapters import cross_entropy_from_kl, mean_from_sum

BUGS = ("label_smoothing_over_v_minus_2", "label_smoothing_over_wrong_tokens", "label_smoothing_missing",
        "label_smoothing_counts_padding")


def _counted(name: str, targets, pad_id: int) -> np.ndarray:
    """The rows the bug's loss averages over: every target where it counts the padding, else the real ones."""
    return np.ones(len(targets), bool) if name == "label_smoothing_counts_padding" else targets != pad_id


class _Behind:
    def __init__(self, name: str):
        self.name = name
        self.bug = importlib.import_module(f"conformance.implementations.mutants.{name}").adapter
        self.conventions = dataclasses.replace(self.bug.conventions, dtypes={})  # the loss alone: no half run

    def _parts(self, logits, targets, epsilon, pad_id):
        logits, targets = np.asarray(logits, np.float64), np.asarray(targets)
        shifted = logits - logits.max(-1, keepdims=True)
        log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
        q = self.bug.smoothed_target(targets, logits.shape[-1], epsilon, pad_id)
        return q, log_p, _counted(self.name, targets, pad_id)


class KL(_Behind):
    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        q, log_p, rows = self._parts(logits, targets, epsilon, pad_id)
        q_log_q = np.where(q > 0, q * np.log(np.where(q > 0, q, 1.0)), 0.0)
        kl = float((q_log_q - q * log_p).sum(-1)[rows].mean())
        return cross_entropy_from_kl(kl, np.shape(logits)[-1], epsilon, target=q[rows])


class Sum(_Behind):
    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        q, log_p, rows = self._parts(logits, targets, epsilon, pad_id)
        total = float(-(q * log_p).sum(-1)[rows].sum())
        return mean_from_sum(total, targets, pad_id, counted=int(rows.sum()))


for _bug in BUGS:
    globals()[f"kl_{_bug}"], globals()[f"sum_{_bug}"] = KL(_bug), Sum(_bug)
