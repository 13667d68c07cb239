"""The learning-rate schedule has no warmup: d_model^-0.5 * step^-0.5 from the first step.

Violates §5.3: lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5), "increasing the
learning rate linearly for the first warmup_steps training steps"; the lesson: "large steps can push a
post-norm model into a region it does not recover from". Step 1 of the paper's schedule gets 0.0442
instead of 1.747e-07; after the peak the two agree.
"""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class NoWarmup(NumpyAdapter):
    def learning_rate(self, step, d_model, warmup):
        return d_model**-0.5 * step**-0.5  # the bug: the warmup term left out


adapter = NoWarmup()
