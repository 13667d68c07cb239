"""§3 model that reverses the source sentence before encoding it (the input-reversal trick of Sutskever et al.,
2014, left in a Transformer): ``src[:, ::-1]`` is embedded and encoded, so the last source token gets position 0,
the padding at the end of a sentence comes first, and the memory comes back in reversed order (the cross-attention
masks the reversed source's padding, consistently), where the paper's encoder reads the source in its order, token
j at position j. The target side, the embeddings' scale, the positional encoding itself and the layers are right.

Style: the float32 NumPy functional model of ``_parts.py`` with ``encode`` and ``decode`` overridden; model only.
"""

import numpy as np

from _parts import NumpyTransformer, model_adapter


class ReversedSource(NumpyTransformer):
    @staticmethod
    def _flip(src):
        return np.ascontiguousarray(np.asarray(src, dtype=np.int64)[:, ::-1])

    def encode(self, src):
        return super().encode(self._flip(src))

    def decode(self, tgt_in, memory, src):
        return super().decode(tgt_in, memory, self._flip(src))


adapter = model_adapter(ReversedSource)
