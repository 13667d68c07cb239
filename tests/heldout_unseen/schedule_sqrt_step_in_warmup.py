"""§5.3 learning rate whose warm-up term grows with the square root of the step instead of linearly:
lrate = d_model^-0.5 * min(step^-0.5, step^0.5 * warmup_steps^-1.5), where the paper has
d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5) (the exponent of step in the warm-up branch written 0.5,
copied from the other branch without its sign). The decay branch is right, but the two branches now cross at
step = warmup_steps^1.5 (253,000 steps for 4,000), not at warmup_steps, so the rate rises far longer.

Style: a closure factory (``make_schedule(d_model, warmup)`` returns the step -> rate function), plain floats;
learning_rate only.
"""

from conformance import Conventions


def make_schedule(d_model, warmup):
    scale = d_model ** -0.5
    warmup_factor = warmup ** -1.5

    def rate(step):
        decay = step ** -0.5
        rise = step ** 0.5 * warmup_factor  # the bug: step^0.5 where the paper has step^1
        return scale * min(decay, rise)

    return rate


class Closure:
    conventions = Conventions(mask="keep", dtype="float64", framework="python (closure)")

    def learning_rate(self, step, d_model, warmup):
        return float(make_schedule(int(d_model), int(warmup))(int(step)))


adapter = Closure()
