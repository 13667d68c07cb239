"""The smoothed loss averages over every target, padding included.

Violates §5.4 as the lesson trains: nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=0.1)
ignores padding targets, so padded positions neither add loss nor dilute the mean.
"""

import dataclasses

import torch

from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import REFERENCE


def smoothed_with_padding(logits, targets, epsilon, pad_id):
    return torch.nn.functional.cross_entropy(logits, targets.clamp(min=0), label_smoothing=epsilon)


adapter = ReferenceAdapter(formulas=dataclasses.replace(REFERENCE, smoothed_loss=smoothed_with_padding),
                           name="mutant:label_smoothing_counts_padding")
