"""The reference declared as a Keras model without a greedy loop of its own: the JAX and Keras helpers have no
``supplied=`` to offer, so its not-implemented message must not name ``TorchAdapter``'s."""

import dataclasses

from conformance.implementations.reference.adapter import ReferenceAdapter, ReferenceModel


class WithoutGreedy(ReferenceModel):
    greedy_decode = None


class KerasLike(ReferenceAdapter):
    model_class = WithoutGreedy


adapter = KerasLike(name="keras-without-greedy")
adapter.conventions = dataclasses.replace(adapter.conventions, framework="keras")
