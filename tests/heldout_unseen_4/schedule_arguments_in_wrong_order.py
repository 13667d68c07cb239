"""§5.3 learning-rate schedule whose helper is called with its arguments in the wrong order: ``noam(d_model, step,
warmup)`` is defined with d_model first and called ``noam(step, d_model, warmup)``, so the two swap roles:
lrate = step^-0.5 * min(d_model^-0.5, d_model * warmup^-1.5), where the paper's
lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5). The result is a pure inverse-square-root decay in
the step from step 1 on, step^-0.5 times a constant min(d_model^-0.5, d_model warmup^-1.5): no warm-up, and a peak
rate at step 1 that depends on d_model and warmup the wrong way. Right only where step = d_model.

Style: a small callable class (an optimiser-side scheduler object) over a pure-Python helper, float64;
learning_rate only.
"""

from conformance import Conventions


def noam(d_model, step, warmup):
    return d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


class NoamRate:
    def __call__(self, step, d_model, warmup):
        return float(noam(step, d_model, warmup))


class Adapter:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="pure Python")

    def __init__(self):
        self.learning_rate = NoamRate()


adapter = Adapter()
