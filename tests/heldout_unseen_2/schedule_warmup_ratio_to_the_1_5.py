"""§5.3 learning-rate schedule whose warm-up branch raises the ratio step / warmup to the power 1.5:
lrate = d_model^-0.5 * min(step^-0.5, (step / warmup_steps)^1.5), where the paper's warm-up branch is
step * warmup_steps^-1.5 (linear in step; only warmup_steps carries the exponent -1.5). The warm-up is no longer
linear, it is (step / warmup)^1.5, and the two branches no longer meet at step = warmup_steps (the rate there is
d_model^-0.5 * warmup^-0.5 from the decay branch, but the warm-up branch exceeds it long before); the decay branch
step^-0.5 is right.

Style: closures: a factory returns the schedule as a function of the step, bound to d_model and warmup;
learning_rate only.
"""

from conformance import Conventions


def make_schedule(d_model, warmup):
    scale = d_model ** -0.5

    def rate(step):
        return scale * min(step ** -0.5, (step / warmup) ** 1.5)

    return rate


class ClosureSchedule:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="pure Python")

    def learning_rate(self, step, d_model, warmup):
        return float(make_schedule(d_model, warmup)(step))


adapter = ClosureSchedule()
