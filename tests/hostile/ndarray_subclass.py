"""Attack: return an ndarray subclass whose comparisons, differences and ufuncs always "agree"; values wrong.

Expected: only its bytes cross the boundary (a plain ndarray); the LayerNorm checks fail.
"""

import numpy as np

from conformance import Conventions


class Agreeable(np.ndarray):
    def __eq__(self, other):
        return np.ones(self.shape, dtype=bool)

    def __sub__(self, other):
        return np.zeros(self.shape)

    __rsub__ = __sub__

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return np.zeros(self.shape)


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def layer_norm(self, x, gamma, beta, eps):
        return np.asarray(x * 3.0).view(Agreeable)


adapter = Adapter()
