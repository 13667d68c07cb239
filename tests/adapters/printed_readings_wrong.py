"""Tiny wrong implementations for the published numbers no mutant of the catalogue gets wrong: each is the NumPy
implementation with one thing changed, certified by tests/test_published_readings.py on the check that reads them."""

import re

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter, NumpyModel


def without(pattern: str) -> NumpyAdapter:
    """The NumPy implementation whose model holds no parameter named like ``pattern`` (the parts a model without them
    would lack): what its dumped weights count."""

    class Model(NumpyModel):
        def __init__(self, adapter, config, seed):
            super().__init__(adapter, config, seed)
            self.shapes = {name: shape for name, shape in self.shapes.items() if not re.search(pattern, name)}

    class Adapter(NumpyAdapter):
        model_class = Model

    return Adapter()


class ValuesFromKeys(NumpyAdapter):
    """Attention that reads its keys where its values belong: softmax(Q K^T / sqrt(d_k)) K, d_k columns wide."""

    def scaled_dot_product_attention(self, q, k, v, mask):
        return super().scaled_dot_product_attention(q, k, np.asarray(k), mask)


ffn_without_biases = without(r"\.ffn\.b[12]$")  # as later models drop them
attention_without_biases = without(r"attn\.b_[QKVO]$")
decoder_without_cross_attention = without(r"^decoder\.\d+\.(cross_attn|norm2)\.")  # a decoder layer like an encoder's
values_from_keys = ValuesFromKeys()
