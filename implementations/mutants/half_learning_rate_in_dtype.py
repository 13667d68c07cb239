"""The learning rate kept in the model's half dtype: lrate(1) = 1.7e-7 is a float16 subnormal, 2.4 % off.

Breaks §5.3 (lrate = d_model^-0.5 min(step^-0.5, step warmup^-1.5)) in half precision: the first warm-up steps'
rates lie below float16's normal range (6.1e-5) and come back in steps of 6e-8; bfloat16 keeps 8 bits. Optimizers keep
the rate in float32 or float64. In float32 runs the rate is rounded to float32, which the checks allow.
"""

import torch

from conformance.implementations.reference.adapter import ReferenceAdapter

ROUNDED_TO = {"float16": torch.float16, "bfloat16": torch.bfloat16}


class RateInDtype(ReferenceAdapter):
    def learning_rate(self, step: int, d_model: int, warmup: int) -> float:
        rate = super().learning_rate(step, d_model, warmup)
        return float(torch.tensor(rate, dtype=ROUNDED_TO.get(self.dtype, torch.float32)))  # the bug


adapter = RateInDtype(name="mutant:half_learning_rate_in_dtype")
