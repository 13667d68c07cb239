"""The learning rate is the paper's schedule times a constant factor 2.

Violates §5.3: lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5), with no factor; toolkits
expose one (OpenNMT-py's ``learning_rate`` multiplies its "noam" decay, 2 in its recommended Transformer
settings; the annotated transformer's ``factor``): 2 d_model^-0.5 min(...) doubles every step.
"""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class ConstantMultiplier(NumpyAdapter):
    def learning_rate(self, step, d_model, warmup):
        return 2.0 * super().learning_rate(step, d_model, warmup)  # the bug: a factor of 2


adapter = ConstantMultiplier()
