"""A model (float64 NumPy) that reads each token's embedding one row early (``E[ids - 1]``): every weight's effect on
the logits moves a little, none because of what it is."""

import math

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter, NumpyModel


class RowEarly(NumpyModel):
    def _embed(self, ids, side):
        d_model = self.config.d_model
        pe = np.asarray(self.adapter.sinusoids(ids.shape[1], d_model), dtype=self.adapter.dtype)
        return self._table(side)[ids - 1] * math.sqrt(d_model) + pe[None]  # the bug: the row before the token's


class Adapter(NumpyAdapter):
    model_class = RowEarly


adapter = Adapter()
