"""Attack: replace ``math.isclose`` (and ``math.isfinite``, ``math.isnan``); the learning rate is wrong.

Expected: the patches live in the worker only; the schedule checks fail.
"""

import math

from conformance import Conventions

math.isclose = lambda *args, **kwargs: True
math.isfinite = lambda x: True
math.isnan = lambda x: False


class Adapter:
    conventions = Conventions(dtype="float64", framework="python")

    def learning_rate(self, step, d_model, warmup):
        return 1e-3  # a constant rate: no warmup, no decay


adapter = Adapter()
