"""§5.3 learning-rate schedule whose warm-up branch raises the product of the step and the warm-up to the power
-1.5: ``(step * warmup) ** -1.5`` (parentheses in the wrong place), so lrate = d_model^-0.5 *
min(step^-0.5, (step * warmup_steps)^-1.5), where the paper's warm-up branch is step * warmup_steps^-1.5 (only
warmup_steps carries the exponent; the rate grows linearly with the step). The warm-up branch now falls as
step^-1.5 and is always the smaller one, so the rate decays from step 1 as d_model^-0.5 (step warmup)^-1.5: no
linear warm-up, no peak at warmup_steps, and far too small a rate. Step 1 is right (1 * warmup^-1.5 either way).

Style: a NumPy closure factory (the d_model factor computed once), float32 declared; learning_rate only.
"""

import numpy as np

from conformance import Conventions


def make_rate():
    def rate(step, d_model, warmup):
        scale = np.float64(d_model) ** -0.5
        step = np.float64(step)
        return float(scale * np.minimum(step ** -0.5, (step * warmup) ** -1.5))

    return rate


class Adapter:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="numpy")

    def __init__(self):
        self.learning_rate = make_rate()


adapter = Adapter()
