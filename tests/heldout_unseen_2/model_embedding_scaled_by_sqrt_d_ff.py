"""§3.4 model whose embeddings are multiplied by sqrt(d_ff) (the FFN's inner size, a neighbouring config field)
instead of sqrt(d_model): the input to each stack is sqrt(d_ff) E[token] + PE(pos), where the paper multiplies
the embedding weights by sqrt(d_model). For the base model the factor is sqrt(2048) = 45.25 instead of
sqrt(512) = 22.63, i.e. sqrt(d_ff / d_model) = 2 times too large. Source and target embeddings alike; the tied
output projection is unscaled, as in the paper.

Style: the torch nn.ModuleDict model of ``_parts.py`` with ``embed_ids`` overridden, float64; model only
(``build_model``).
"""

import math

from _parts import Model, Seq2Seq, model_adapter, sinusoids


class InnerScaledSeq2Seq(Seq2Seq):
    def embed_ids(self, ids, side):
        d = self.cfg["d_model"]
        x = self.embed[side](ids) * math.sqrt(self.cfg["d_ff"]) + sinusoids(ids.shape[1], d)[None]
        return x.transpose(0, 1)


class InnerScaledModel(Model):
    net_class = InnerScaledSeq2Seq


adapter = model_adapter(InnerScaledModel)
