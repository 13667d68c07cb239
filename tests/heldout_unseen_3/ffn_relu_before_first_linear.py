"""§3.3 position-wise feed-forward network with its ReLU in the wrong place: the layers are listed as
[relu, linear(W1, b1), linear(W2, b2)], so the activation is applied to the input and none sits between the two
linear maps: FFN(x) = (max(0, x) W1 + b1) W2 + b2, where the paper has max(0, x W1 + b1) W2 + b2 (the ReLU on the
hidden layer, between the two linear transformations). The weights and biases are right; the network is affine
in the positive part of its input.

Style: a pipeline of plain Python callables (a hand-rolled "Sequential") over NumPy arrays, float64;
feed_forward only.
"""

from functools import reduce

import numpy as np

from conformance import Conventions


def relu(x):
    return np.maximum(x, 0.0)


def linear(W, b):
    return lambda x: x @ W + b


class Pipeline:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

    def feed_forward(self, x, weights):
        layers = [relu, linear(weights["W1"], weights["b1"]), linear(weights["W2"], weights["b2"])]
        return reduce(lambda acc, f: f(acc), layers, np.asarray(x, dtype=np.float64))


adapter = Pipeline()
