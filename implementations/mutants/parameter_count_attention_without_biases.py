"""The parameter count leaves out the attention biases although the configuration has them.

Violates Table 3 (§6.2) as the lesson counts it (Step 7): "attention 4d^2 + 4d", "W_Q, W_K, W_V, W_O and their
biases": with ``attention_bias`` the base model has 63,082,496 parameters; counting the paper's formulas
(no biases) whatever the configuration gives 36,864 fewer.
"""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class WithoutBiases(NumpyAdapter):
    def attention_parameters(self, config):
        return super().attention_parameters({**config, "attention_bias": False})  # the bug: the flag ignored


adapter = WithoutBiases()
