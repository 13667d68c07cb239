"""A learning-rate schedule that keeps its own step: each call advances a counter and the step it is given is not
read (a scheduler's internal count standing in for the optimiser's step). No model, no randomness."""

from conformance import Conventions


class LrCountsCalls:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="python")

    def __init__(self):
        self.calls = 0

    def learning_rate(self, step, d_model, warmup):
        self.calls += 1
        return d_model**-0.5 * min(self.calls**-0.5, self.calls * warmup**-1.5)


adapter = LrCountsCalls()
