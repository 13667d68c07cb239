"""§5.3 learning-rate schedule that ignores the step it is given and uses its own counter: written after the
annotated transformer's ``NoamOpt`` (``rate(step=None)`` falls back to the optimiser's internal ``_step``), the
adapter advances the counter and calls ``rate()`` without passing the step, so the k-th call returns
d_model^-0.5 * min(k^-0.5, k * warmup_steps^-1.5) whatever step was asked, where the paper's lrate is that formula at
the given step_num. Right only when the steps are asked in the order 1, 2, 3, ... from a fresh scheduler. The formula
(d_model^-0.5, the min, both branches, warmup_steps) is right.

Style: a stateful scheduler class in pure Python (float64); learning_rate only.
"""

from conformance import Conventions


class NoamRate:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="pure Python")

    def __init__(self):
        self._step = 0

    def rate(self, step=None, d_model=512, warmup=4000):
        if step is None:
            step = self._step
        return d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)

    def learning_rate(self, step, d_model, warmup):
        self._step += 1
        return self.rate(d_model=d_model, warmup=warmup)


adapter = NoamRate()
