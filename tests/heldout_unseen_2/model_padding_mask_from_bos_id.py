"""§3.2.3 model whose padding masks are built from the start token's id: the masks hide the keys whose id equals
bos_id (<s>) instead of pad_id, so padding is never hidden (the encoder, the cross-attention and the decoder
self-attention all read the padded positions) and the decoder's <s> position is hidden as a key from every target
position, where the paper's model prevents attention to padding only (``ids == pad_id``). The causal mask, the
layers and the embeddings are right.

Style: the torch nn.ModuleDict model of ``_parts.py`` with ``pad_blocked`` overridden, blocked masks, float64;
model only (``build_model``).
"""

from _parts import Model, Seq2Seq, model_adapter


class StartMaskedSeq2Seq(Seq2Seq):
    def pad_blocked(self, ids, Lq):
        return (ids == self.cfg["bos_id"])[:, None, :].expand(-1, Lq, -1)


class StartMaskedModel(Model):
    net_class = StartMaskedSeq2Seq


adapter = model_adapter(StartMaskedModel)
