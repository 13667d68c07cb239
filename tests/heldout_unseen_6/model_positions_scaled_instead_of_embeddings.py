"""§3.4 and §3.5 embedding scale applied to the positional encoding instead of the embedding: a helper
``scaled_sum(x, pe)`` returns ``x * sqrt(d_model) + pe`` and is called as ``scaled_sum(positions, embeddings)``
(arguments in the wrong order), so each input is E[token] + sqrt(d_model) * PE(pos) where the paper's is
sqrt(d_model) * E[token] + PE(pos): the embeddings are not scaled and the positions are scaled up (the same on the
source and the target side). The lookup, the positional table, the layers and the tied output projection (which
reads E unscaled, as the paper's) are right.

Style: the float32 sequence-first torch-module model of ``_parts.py`` with its embedding step rewritten; model only.
"""

import math

from _parts import SeqFirstTransformer, model_adapter, sinusoids


class ScaledPositions(SeqFirstTransformer):
    def scaled_sum(self, x, pe):
        return x * math.sqrt(self.d_model) + pe

    def embed(self, ids, table):
        return self.scaled_sum(sinusoids(ids.shape[0], self.d_model), table(ids))


adapter = model_adapter(ScaledPositions)
