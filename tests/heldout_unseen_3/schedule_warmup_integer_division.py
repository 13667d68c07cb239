"""§5.3 learning rate written in the normalised form peak * min(step / warmup, sqrt(warmup / step)), with
peak = d_model^-0.5 * warmup^-0.5 (the same function as the paper's), but with the warm-up ratio computed by
integer (floor) division, ``step // warmup``: it is 0 for every step before warmup_steps, so the rate is 0
throughout the warm-up and jumps to the peak at step = warmup_steps, where the paper's
lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5) increases linearly over the first warmup_steps
steps. From step = warmup_steps on (the inverse-square-root decay) the rate is right.

Style: pure Python integers and math, a small class with the schedule as a method; learning_rate only.
"""

import math

from conformance import Conventions


class NormalisedNoam:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="pure Python")

    def learning_rate(self, step, d_model, warmup):
        step, warmup = int(step), int(warmup)
        peak = 1.0 / math.sqrt(d_model * warmup)
        return peak * min(step // warmup, math.sqrt(warmup / step))


adapter = NormalisedNoam()
