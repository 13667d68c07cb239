"""Schedule that decays as 1/step after the warm-up instead of 1/sqrt(step), continuous at the peak."""

import math

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="python")

    def learning_rate(self, step, d_model, warmup):
        peak = 1.0 / math.sqrt(d_model * warmup)
        return peak * step / warmup if step < warmup else peak * warmup / step


adapter = Adapter()
