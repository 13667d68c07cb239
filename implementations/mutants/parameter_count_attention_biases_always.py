"""The parameter count includes attention biases although the configuration has none.

Violates Table 3 (§6.2) as the lesson counts it (Step 7): "Like PyTorch, the count gives every attention
matrix a bias; the paper's attention formulas show none, which would remove only 36,864 parameters"
(§3.2.2's projections are parameter matrices only). A count that always adds the 4 d biases of each
attention (``nn.Linear``'s default ``bias=True``) is 36,864 too high for the base model without biases.
"""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class BiasesAlways(NumpyAdapter):
    def attention_parameters(self, config):
        return super().attention_parameters({**config, "attention_bias": True})  # the bug: the flag ignored


adapter = BiasesAlways()
