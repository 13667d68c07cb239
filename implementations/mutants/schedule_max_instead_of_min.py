"""The learning-rate schedule takes max instead of min of its two terms.

Violates §5.3: lrate = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5). With max, the rate starts at
its largest (d_model^-0.5 at step 1) and grows without bound after warmup: no warmup, no decay.
"""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class MaxInsteadOfMin(NumpyAdapter):
    def learning_rate(self, step, d_model, warmup):
        return d_model**-0.5 * max(step**-0.5, step * warmup**-1.5)  # the bug: max


adapter = MaxInsteadOfMin()
