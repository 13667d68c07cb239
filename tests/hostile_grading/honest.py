"""Not an attack: an honest classmate (positional encoding and attention from _honest.py), the control."""

import _honest

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        return _honest.positional_encoding(n, d_model)

    def scaled_dot_product_attention(self, q, k, v, mask):
        return _honest.attention(q, k, v, mask)


adapter = Adapter()
