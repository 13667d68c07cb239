"""§3.4 model whose embedding scale is read from the wrong axis of the table: ``math.sqrt(E.shape[0])`` (the
vocabulary size V, the table's rows) where ``E.shape[1]`` (d_model, its columns) was meant, so the input to each
stack is sqrt(V) E[token] + PE(pos), where the paper multiplies the embedding weights by sqrt(d_model). The factor is
right only when V = d_model; otherwise the embeddings are sqrt(V / d_model) times too large (or too small) against
the positional encodings. Source and target alike; the tied output projection (y E^T, unscaled), the positional
encoding and the layers are right.

Style: the float64 NumPy module-class model of ``_parts.py`` with ``embed`` overridden; model only.
"""

import math

from _parts import NumpyModules, model_adapter


class RowCountScale(NumpyModules):
    def embed(self, ids, side):
        table = self.table(side)
        return table[ids] * math.sqrt(table.shape[0])


adapter = model_adapter(RowCountScale)
