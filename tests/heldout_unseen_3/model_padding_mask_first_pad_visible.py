"""§3.2.3 model whose padding masks are built from sentence lengths with an off-by-one: the length of each
sentence is counted, ``n = (ids != pad_id).sum(1)``, and the keys kept are ``arange(L) <= n`` instead of
``< n``, so the first padding position after each sentence stays visible as a key (in the encoder's
self-attention, the encoder-decoder attention and the decoder's self-attention), where the paper's model hides
every padding key (keeps exactly the positions whose id is not pad_id). A sentence without padding is right; the
causal mask, the embeddings and the layers are right.

Style: the float32 NumPy functional model of ``_parts.py`` with ``key_padding`` rewritten from lengths; model only.
"""

import numpy as np

from _parts import NEG, F, NumpyTransformer, model_adapter


class LengthMasked(NumpyTransformer):
    def key_padding(self, ids):
        lengths = (ids != self.c.pad_id).sum(1)
        keep = np.arange(ids.shape[1])[None, :] <= lengths[:, None]
        return np.where(keep, F(0), NEG)[:, None, :].astype(F)


adapter = model_adapter(LengthMasked)
