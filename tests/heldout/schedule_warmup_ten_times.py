"""Noam schedule whose warm-up is counted in tenths (warmup * 10 steps), written as a closure factory."""

from conformance import Conventions


def noam(d_model, warmup, factor=1.0):
    def rate(step):
        return factor * d_model**-0.5 * min(step**-0.5, step * (10 * warmup) ** -1.5)

    return rate


class Adapter:
    conventions = Conventions(dtype="float64", framework="python")

    def learning_rate(self, step, d_model, warmup):
        return noam(d_model, warmup)(step)


adapter = Adapter()
