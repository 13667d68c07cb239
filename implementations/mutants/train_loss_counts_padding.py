"""The training loss averages over every target position, padding included (no ignore_index).

Violates §5.4 as the lesson applies it: ``nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=0.1)``,
the smoothed cross-entropy of the real targets only. Here the padding targets after </s> count too:
the model is also trained to predict padding, the loss is a mean over more (easy) positions, and the
gradient of the real tokens is scaled down by the fraction of padding in the batch.

The adapter's ``label_smoothed_loss`` part stays correct (it ignores padding); only the loss the
trainer minimises and reports counts it, so only the training checks can catch it.
"""

from __future__ import annotations

import dataclasses

import torch

from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import REFERENCE


def loss_counting_padding(logits, targets, epsilon, pad_id):
    V = logits.shape[-1]
    log_p = torch.log_softmax(logits, dim=-1)
    q = torch.full_like(log_p, epsilon / V)
    q.scatter_add_(-1, targets.unsqueeze(-1), torch.full_like(log_p[:, :1], 1.0 - epsilon))
    return -(q * log_p).sum(-1).mean()  # every position, padding included


class TrainerLossCountsPadding(ReferenceAdapter):
    @torch.no_grad()
    def label_smoothed_loss(self, logits, targets, epsilon: float, pad_id: int) -> float:
        loss = REFERENCE.smoothed_loss(self._floats(logits), torch.as_tensor(targets), float(epsilon), int(pad_id))
        return float(loss.item())  # the part is right


adapter = TrainerLossCountsPadding(
    formulas=dataclasses.replace(REFERENCE, smoothed_loss=loss_counting_padding),
    name="mutant:train_loss_counts_padding",
)
