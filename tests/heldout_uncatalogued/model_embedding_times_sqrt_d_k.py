"""§3.4 embeddings multiplied by sqrt(d_k) (the per-head size, d_model / h) instead of sqrt(d_model): the wrong
dimension under the root. A model-only NumPy adapter."""

import math

from _numpy_parts import Seq2Seq, model_only, sinusoids


class Model(Seq2Seq):
    def embed(self, ids, table):
        d_k = self.cfg["d_model"] // self.cfg["h"]
        return table[ids] * math.sqrt(d_k) + sinusoids(ids.shape[1], self.cfg["d_model"])  # the bug: d_k


adapter = model_only(Model)
