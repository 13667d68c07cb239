"""§3.4/§3.5: the model multiplies the sum (embedding + positional encoding) by sqrt(d_model), so the positional
encoding is scaled by sqrt(d_model) too; the paper scales only the embedding, then adds the encoding unscaled.
A model-only NumPy adapter (class-based model, one overridden stage)."""

import math

from _numpy_parts import Seq2Seq, model_only, sinusoids


class Model(Seq2Seq):
    def embed(self, ids, table):
        d = self.cfg["d_model"]
        return (table[ids] + sinusoids(ids.shape[1], d)) * math.sqrt(d)  # the bug: the scale covers the PE too


adapter = model_only(Model)
