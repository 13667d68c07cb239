"""§3.2.3 model whose padding mask is one mask for the whole batch: the helper computes the padded positions as
``(ids == pad_id).any(axis=0)``, a position hidden in *every* sentence if *any* sentence of the batch has padding
there, where the paper hides each sentence's own padding keys. Every sentence then reads only the positions before
the end of the batch's shortest sentence: the longer sentences lose their last tokens as keys (in the encoder's
self-attention, the decoder's self-attention and the encoder-decoder attention alike, one helper). A batch whose
sentences have equal lengths is right. The causal mask, the attention, the layers, the embeddings and the positions
are right.

Style: the float64 NumPy module-class model of ``_parts.py`` with ``keep_mask`` overridden; model only.
"""

from _parts import NumpyModules, model_adapter


class BatchMask(NumpyModules):
    def keep_mask(self, ids):
        padded = (ids == self.pad_id).any(axis=0)  # (L,): the padded positions of the batch
        return ~padded[None, None, None, :]


adapter = model_adapter(BatchMask)
