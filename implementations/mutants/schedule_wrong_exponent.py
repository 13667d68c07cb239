"""Learning-rate schedule with step^0.5 instead of step^-0.5: it rises for 250,000 steps and never decays.

Violates §5.3: lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5), "increasing the learning
rate linearly for the first warmup_steps training steps, and decreasing it thereafter proportionally
to the inverse square root of the step number". A lost minus sign: min(sqrt(step), step * warmup^-1.5)
is the linear term until step = warmup^1.5 (252,982 for warmup 4,000).
"""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class PositiveExponent(NumpyAdapter):
    def learning_rate(self, step, d_model, warmup):
        return d_model**-0.5 * min(step**0.5, step * warmup**-1.5)  # the bug: step^0.5


adapter = PositiveExponent()
