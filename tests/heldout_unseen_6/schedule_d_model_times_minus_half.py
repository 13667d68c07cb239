"""§5.3 learning-rate schedule with one asterisk missing: ``d_model * -0.5`` where ``d_model ** -0.5`` was meant, so
the rate is -(d_model / 2) * min(step^-0.5, step * warmup_steps^-1.5): negative, and d_model^1.5 / 2 times the
paper's in size (for the base model -256 times the min instead of 0.0442 times it, a peak of -4.05 instead of
6.99 * 10^-4), where the paper's lrate is d_model^-0.5 * min(step_num^-0.5, step_num * warmup_steps^-1.5). The min,
both branches and warmup_steps are right: the shape of the curve (its warm-up, peak step and decay) is the paper's.

Style: a NumPy function (float64); learning_rate only.
"""

import numpy as np

from conformance import Conventions


def noam(step, d_model, warmup):
    step = np.float64(step)
    return float(d_model * -0.5 * np.minimum(step ** -0.5, step * warmup ** -1.5))


class Schedule:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

    def learning_rate(self, step, d_model, warmup):
        return noam(step, d_model, warmup)


adapter = Schedule()
