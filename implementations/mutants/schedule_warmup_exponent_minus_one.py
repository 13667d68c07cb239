"""The learning-rate schedule's warmup term is step * warmup^-1 instead of step * warmup^-1.5.

Violates §5.3: lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5): the two terms meet at
step = warmup_steps, the peak ("The two terms are equal at the peak, step = warmup_steps"). With
warmup^-1 the linear term is sqrt(warmup) times too steep and meets step^-0.5 at step warmup^(2/3): for
the paper's 4,000 the rate peaks at step 252 at 2.8e-3, four times the paper's 6.99e-4 at step 4,000.
"""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class WarmupExponentMinusOne(NumpyAdapter):
    def learning_rate(self, step, d_model, warmup):
        return d_model**-0.5 * min(step**-0.5, step * warmup**-1.0)  # the bug: warmup^-1


adapter = WarmupExponentMinusOne()
