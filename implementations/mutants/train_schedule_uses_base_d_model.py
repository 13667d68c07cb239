"""The trainer's schedule uses the base model's d_model = 512 whatever the model's d_model.

Violates §5.3: lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5) with the model's own
d_model; the lesson's toy: "The peak learning rate is then 64^-0.5 x 400^-0.5 = 0.00625". A schedule
written as ``lrate(step, d_model=512, ...)`` and called without d_model gives the toy rates sqrt(8) =
2.8 times too small. The adapter's ``learning_rate`` part, which gets d_model as an argument, is right;
only training shows it.
"""

from __future__ import annotations

import dataclasses

from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import REFERENCE, noam_learning_rate


def rate_for_d_model_512(step: int, d_model: int, warmup: int) -> float:
    return noam_learning_rate(step, 512, warmup)  # the bug: d_model ignored


class TrainerForBaseDModel(ReferenceAdapter):
    """The reference, except that its Trainer's LambdaLR uses ``rate_for_d_model_512``."""

    def learning_rate(self, step: int, d_model: int, warmup: int) -> float:
        return float(REFERENCE.learning_rate(int(step), int(d_model), int(warmup)))  # the part is right


adapter = TrainerForBaseDModel(formulas=dataclasses.replace(REFERENCE, learning_rate=rate_for_d_model_512),
                               name="mutant:train_schedule_uses_base_d_model")
