"""Label smoothing puts eps / (V - 1) on each wrong token and exactly 1 - eps on the right one.

A documented alternative convention (Szegedy et al. spread over the other classes), but not what
the lesson and PyTorch compute (§5.4 as the lesson states it: q(k) = (1 - eps)[k = right] + eps / V).
The published target 0.9077 becomes 0.9000, and the floor 0.537 becomes 0.5448.
"""

import dataclasses

import torch

from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import REFERENCE


def smoothed_over_wrong_tokens(logits, targets, epsilon, pad_id):
    V = logits.shape[-1]
    log_p = torch.log_softmax(logits, dim=-1)
    q = torch.full_like(log_p, epsilon / (V - 1))
    q.scatter_(-1, targets.clamp(min=0).unsqueeze(-1), 1.0 - epsilon)
    real = targets != pad_id
    return -(q * log_p).sum(-1)[real].mean()


adapter = ReferenceAdapter(formulas=dataclasses.replace(REFERENCE, smoothed_loss=smoothed_over_wrong_tokens),
                           name="mutant:label_smoothing_over_wrong_tokens")
