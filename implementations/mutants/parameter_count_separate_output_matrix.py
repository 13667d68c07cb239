"""The parameter count adds a separate output matrix (d_model x V) although the output is tied to E.

Violates §3.4 as the lesson counts it: "we share the same weight matrix between the two embedding
layers and the pre-softmax linear transformation", so a tied model has no output matrix of its own; the
lesson's 63,082,496 for the base model become 82,026,496 only "with a separate output matrix".
"""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class SeparateOutputMatrix(NumpyAdapter):
    def output_parameters(self, config):
        return config["d_model"] * config["tgt_vocab"]  # the bug: counted whether tied or not


adapter = SeparateOutputMatrix()
