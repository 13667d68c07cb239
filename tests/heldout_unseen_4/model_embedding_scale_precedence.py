"""§3.4 model whose embedding scale is written ``d_model ** 1/2``: Python's ``**`` binds tighter than ``/``, so the
factor is (d_model ** 1) / 2 = d_model / 2 (256 for the base model's 512) instead of d_model ** (1/2) = sqrt(d_model)
(22.63 for 512): the input to each stack is (d_model / 2) E[token] + PE(pos), where the paper multiplies the
embedding weights by sqrt(d_model). The two agree only for d_model = 4; for d_model = 16 the embeddings are twice too
large, for 512 about 11.3 times. Source and target embeddings alike; the tied output projection (y E^T), the
positional encoding and the layers are right.

Style: the float64 torch dict-of-tensors model of ``_parts.py`` with ``scaled_lookup`` overridden; model only.
"""

from _parts import DictTransformer, model_adapter


class PrecedenceScale(DictTransformer):
    def scaled_lookup(self, ids, side):
        return self.table(side)[ids] * self.c.d_model ** 1/2


adapter = model_adapter(PrecedenceScale)
