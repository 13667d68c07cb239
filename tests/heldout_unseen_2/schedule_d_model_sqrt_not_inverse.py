"""§5.3 learning-rate schedule multiplied by sqrt(d_model) instead of divided by it: lrate = d_model^0.5 *
min(step^-0.5, step * warmup_steps^-1.5), where the paper's factor is d_model^-0.5. The shape (linear warm-up,
inverse-square-root decay, the peak at step = warmup_steps) is right; every rate is d_model times the paper's
(512 times for the base model).

Style: a Python generator that yields one rate for each step it is sent through (an optimiser's schedule iterator),
float32 declared; learning_rate only.
"""

from conformance import Conventions


def schedule(steps, d_model, warmup):
    for step in steps:
        yield d_model ** 0.5 * min(step ** -0.5, step * warmup ** -1.5)


class GeneratorSchedule:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="pure Python")

    def learning_rate(self, step, d_model, warmup):
        return float(next(schedule([int(step)], d_model, warmup)))


adapter = GeneratorSchedule()
