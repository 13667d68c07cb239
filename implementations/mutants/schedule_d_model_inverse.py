"""The learning-rate schedule scales by d_model^-1 instead of d_model^-0.5.

Violates §5.3: lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5); the lesson's hand check:
"512^-0.5 = 0.0442 and 4000^-0.5 = 0.0158, so the peak is 0.0442 x 0.0158 = 6.99 x 10^-4". With
d_model^-1 every rate is sqrt(d_model) times too small: 22.6 times for the base model, 8 for the toy.
"""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class DModelInverse(NumpyAdapter):
    def learning_rate(self, step, d_model, warmup):
        return d_model**-1.0 * min(step**-0.5, step * warmup**-1.5)  # the bug: d_model^-1


adapter = DModelInverse()
