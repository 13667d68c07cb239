"""§5.3 learning rate that warms up linearly but never decays: d_model^-0.5 * warmup^-1.5 * min(step, warmup), a
constant d_model^-0.5 * warmup^-0.5 after the warm-up, where the paper decays as d_model^-0.5 * step^-0.5 (the
inverse-square-root term dropped). Written as a closure over the peak."""

from conformance import Conventions


def linear_warmup(d_model, warmup):
    peak = d_model**-0.5 * warmup**-0.5

    def lr(step):
        return peak * min(step, warmup) / warmup  # the bug: no step^-0.5 decay after warm-up

    return lr


class Adapter:
    conventions = Conventions(dtype="float64", framework="python")

    def learning_rate(self, step, d_model, warmup):
        return linear_warmup(d_model, warmup)(step)


adapter = Adapter()
