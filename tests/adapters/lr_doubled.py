"""A learning-rate schedule with a constant multiplier: 2 x the paper's lrate (a common real deviation).

At step 1, in warm-up, 2 * lrate(1) = lrate(2): an off-by-one fits that one number, and nothing else.
"""

from conformance import Conventions


class LrDoubled:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="python")

    def learning_rate(self, step, d_model, warmup):
        return 2.0 * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


adapter = LrDoubled()
