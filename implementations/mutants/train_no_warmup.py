"""The trainer's learning rate has no warmup: d_model^-0.5 * step^-0.5 from the first step.

Violates §5.3: lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5), "increasing the
learning rate linearly for the first warmup_steps training steps". The toy's first update then uses
0.125 instead of 3.13e-5 (4,000 times the published rate) and the post-norm model does not learn.

The adapter's ``learning_rate`` part stays correct: only the rate the trainer applies is wrong, as when
a training loop writes its own schedule instead of calling the one it was tested with. So the forward
and schedule-formula checks pass, and only the training checks, which read the rate each update used,
can catch it.
"""

from __future__ import annotations

import dataclasses

from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import REFERENCE


def rate_without_warmup(step: int, d_model: int, warmup: int) -> float:
    return d_model**-0.5 * step**-0.5


class TrainerWithoutWarmup(ReferenceAdapter):
    """The reference, except that its Trainer's LambdaLR uses ``rate_without_warmup``."""

    def learning_rate(self, step: int, d_model: int, warmup: int) -> float:
        return float(REFERENCE.learning_rate(int(step), int(d_model), int(warmup)))  # the part is right


adapter = TrainerWithoutWarmup(
    formulas=dataclasses.replace(REFERENCE, learning_rate=rate_without_warmup), name="mutant:train_no_warmup"
)
