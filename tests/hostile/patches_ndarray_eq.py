"""Attack: rewrite ``numpy.ndarray.__eq__`` and ``__sub__`` themselves (through the type's real dict),
so that any array equals any other and every difference is zero; the PE is wrong.

Expected: the worker's ndarray is changed, the grader's is not; the PE checks fail.
"""

import ctypes
import gc

import numpy as np

from conformance import Conventions


def curse(cls, name, function):
    gc.get_referents(cls.__dict__)[0][name] = function
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        return np.full((n, d_model), 0.5)


curse(np.ndarray, "__eq__", lambda self, other: np.ones(np.shape(self), dtype=bool))
curse(np.ndarray, "__sub__", lambda self, other: np.zeros(np.shape(self)))
adapter = Adapter()
