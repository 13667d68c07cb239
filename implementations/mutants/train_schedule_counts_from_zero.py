"""The trainer's LambdaLR lacks the + 1: update s uses lrate(s - 1), updates 1 and 2 both lrate(1).

Violates §5.3 as the lesson applies it: LambdaLR counts from 0 and the paper's steps from 1, so the
lesson writes ``LambdaLR(opt, lambda s: lrate(s + 1, 64, 400))``. Without the + 1, LambdaLR's step 0 has
no rate (0^-0.5); the annotated transformer's guard counts it as 1, so every update after the first
uses the previous step's rate. The adapter's ``learning_rate`` part is right; only training shows it.
"""

from __future__ import annotations

import dataclasses

from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import REFERENCE, noam_learning_rate


def rate_of_lambda_lr_without_plus_one(step: int, d_model: int, warmup: int) -> float:
    # The reference's Trainer calls this with LambdaLR's count + 1: the bug undoes the + 1.
    return noam_learning_rate(max(step - 1, 1), d_model, warmup)


class TrainerCountsFromZero(ReferenceAdapter):
    """The reference, except that its Trainer's LambdaLR uses ``rate_of_lambda_lr_without_plus_one``."""

    def learning_rate(self, step: int, d_model: int, warmup: int) -> float:
        return float(REFERENCE.learning_rate(int(step), int(d_model), int(warmup)))  # the part is right


adapter = TrainerCountsFromZero(
    formulas=dataclasses.replace(REFERENCE, learning_rate=rate_of_lambda_lr_without_plus_one),
    name="mutant:train_schedule_counts_from_zero",
)
