"""§3.4 model whose embedding lookup is off by one: the code numbers its vocabulary from 1 and looks a token up as
``E[ids - 1]``, so token t is embedded as sqrt(d_model) E[t - 1] (the previous row of the table; token 0 wraps round
to the last row, E[-1]), where the paper's token t is embedded as sqrt(d_model) E[t], the row that the (shared,
tied) output projection y E^T also uses for t. Source and target lookups alike (one helper); the output projection
(y E^T, every row in its place), the scale, the positional encoding and the layers are right.

Style: the float64 NumPy module-class model of ``_parts.py`` with ``embed`` overridden; model only.
"""

import math

from _parts import NumpyModules, model_adapter


class OneBasedLookup(NumpyModules):
    def embed(self, ids, side):
        return self.table(side)[ids - 1] * math.sqrt(self.d)


adapter = model_adapter(OneBasedLookup)
