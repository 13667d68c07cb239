"""A composite part whose FFN sublayer adds the residual after its LayerNorm: x + LayerNorm(FFN(x)) where the paper
computes LayerNorm(x + FFN(x)) (no known bug: a test that a composite sublayer's check asks the diagnosis a
question). Built on the NumPy implementation's formulas."""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class Adapter:
    conventions = NumpyAdapter.conventions

    def ffn_sublayer(self, x, weights, eps):
        paper = NumpyAdapter()
        normed = paper.layer_norm(paper.feed_forward(x, weights), weights["norm.gamma"], weights["norm.beta"], eps)
        return x + normed


adapter = Adapter()
