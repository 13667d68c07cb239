"""A model-only adapter whose feed-forward networks add their second bias twice (no known bug: a test of the
generated neighbourhood's model profile). Built on the NumPy implementation, one formula overridden; only
``build_model`` is offered, as a model-only adapter offers it."""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class Doubled(NumpyAdapter):
    def feed_forward(self, x, weights):
        return self.activation(x @ weights["W1"] + weights["b1"]) @ weights["W2"] + 2 * weights["b2"]


class Adapter:
    conventions = Doubled.conventions

    def build_model(self, config, seed):
        return Doubled().build_model(config, seed)


adapter = Adapter()
