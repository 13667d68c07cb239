"""A model (float64 NumPy) whose positional encoding is indexed by the batch axis: sentence b gets PE(b) at every
position (a sequence-first table read with batch-first input), so a sentence's logits depend on its row index."""

import math

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter, NumpyModel


class RowPositions(NumpyModel):
    def _embed(self, ids, side):
        d_model = self.config.d_model
        pe = np.asarray(self.adapter.sinusoids(ids.shape[0], d_model), dtype=self.adapter.dtype)
        return self._table(side)[ids] * math.sqrt(d_model) + pe[:, None]  # the bug: PE(b), not PE(pos)


class Adapter(NumpyAdapter):
    model_class = RowPositions


adapter = Adapter()
