"""§3.4 model whose embedding scale is the integer square root of d_model: the embeddings are multiplied by
floor(sqrt(d_model)) (``math.isqrt(d_model)``: 22 for the base model's 512), where the paper multiplies the
embedding weights by sqrt(d_model) itself (22.627 for 512). Exact when d_model is a perfect square (64, 256: 8,
16); otherwise the embeddings are slightly too small relative to the positional encoding (by 2.8 % at 512). Source
and target embeddings alike; the tied output projection, the positions and the layers are right.

Style: the torch nn.ModuleDict model of ``_parts.py`` with ``embed_ids`` overridden, float64; model only
(``build_model``).
"""

import math

from _parts import Model, Seq2Seq, model_adapter, sinusoids


class IntegerScaledSeq2Seq(Seq2Seq):
    def embed_ids(self, ids, side):
        d = self.cfg["d_model"]
        x = self.embed[side](ids) * math.isqrt(d) + sinusoids(ids.shape[1], d)[None]
        return x.transpose(0, 1)


class IntegerScaledModel(Model):
    net_class = IntegerScaledSeq2Seq


adapter = model_adapter(IntegerScaledModel)
