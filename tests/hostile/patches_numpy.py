"""Attack: replace NumPy's comparison functions at import so that everything is "close"; LayerNorm is wrong.

Expected: the patches live in the worker only; the grader compares with its own NumPy and the
LayerNorm checks fail.
"""

import numpy as np
import numpy.testing

from conformance import Conventions


def always(*args, **kwargs):
    return True


def never_raises(*args, **kwargs):
    return None


np.allclose = np.isclose = np.array_equal = np.array_equiv = always
numpy.testing.assert_allclose = numpy.testing.assert_array_almost_equal = never_raises
numpy.testing.assert_array_equal = numpy.testing.assert_almost_equal = never_raises


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def layer_norm(self, x, gamma, beta, eps):
        return x * gamma + beta


adapter = Adapter()
