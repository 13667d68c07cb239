"""§5.3 learning rate with the d_model^-0.5 factor inside the min, on the warm-up branch only:
min(step^-0.5, d_model^-0.5 * step * warmup^-1.5) where the paper has d_model^-0.5 * min(step^-0.5, step *
warmup^-1.5): the warm-up is right, the decay d_model^0.5 times too high (and the peak moves). NumPy."""

import numpy as np

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def learning_rate(self, step, d_model, warmup):
        decay = np.power(float(step), -0.5)
        ramp = np.power(float(d_model), -0.5) * step * np.power(float(warmup), -1.5)
        return float(np.minimum(decay, ramp))  # the bug: d_model^-0.5 applied only to the ramp


adapter = Adapter()
