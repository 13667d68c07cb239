"""Attack: make the grader's expected value agree with a wrong answer by rewriting the inputs in place.

LayerNorm returns its input unchanged, after normalising x itself and setting gamma = 1, beta = 0: a
suite that computed LayerNorm(x) afterwards from the same arrays would find LayerNorm(x') = x'.
Expected: the worker's arrays are copies; the grader's stay as they were; the LayerNorm checks fail.
"""

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def layer_norm(self, x, gamma, beta, eps):
        x -= x.mean(-1, keepdims=True)
        x /= x.std(-1, keepdims=True) + 1e-12
        gamma[...] = 1.0
        beta[...] = 0.0
        return x.copy() * 2.0  # wrong by a factor of 2 on fresh inputs


adapter = Adapter()
