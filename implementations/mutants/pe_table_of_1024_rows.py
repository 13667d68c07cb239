"""Positions read from a table of 1,024 rows: a longer sequence raises instead of being encoded.

Breaks the suite's convention that a source of 1,100 tokens is encoded (docs/claims.md); §3.5's sinusoids
are defined at every position, and the lesson says the paper kept them because they "may allow the model to
extrapolate to sequence lengths longer than the ones encountered during training". Within the table every
value is the paper's. Hugging Face's Marian and FSMT build ``max_position_embeddings`` rows (1,024 by default);
BERT-era code 512, learned or precomputed.
"""

import math

from conformance.implementations.numpy_impl.adapter import NumpyAdapter, NumpyModel

ROWS = 1024


class TableModel(NumpyModel):
    def _embed(self, ids, side):
        d_model = self.config.d_model
        table = self.adapter.sinusoids(ROWS, d_model)
        positions = range(ids.shape[1])
        pe = table[list(positions)][None]  # the bug: IndexError past row 1,023
        return self._table(side)[ids] * math.sqrt(d_model) + pe


class TableOf1024Rows(NumpyAdapter):
    model_class = TableModel


adapter = TableOf1024Rows()
