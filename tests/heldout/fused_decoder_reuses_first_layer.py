"""Decoder that runs its first layer N times (a loop over range(N) calling self.decoder[0]): the other layers'
weights are loaded and never used. Sequence-first fused-QKV torch; model only."""

import torch.nn.functional as F
from _fused import model_only

from conformance.implementations.variants.fused_qkv_model import Seq2SeqTransformer


class FirstLayerOnly(Seq2SeqTransformer):
    def decode(self, tgt_in, memory, src):
        pad = self.cfg.pad_id
        tgt_pad, src_pad = (tgt_in == pad).T, (src == pad).T
        y = self.embed(tgt_in, "tgt")
        for _ in self.decoder:
            y = self.decoder[0](y, memory, tgt_pad, src_pad)  # the bug: always layer 0
        return F.linear(y, self.table("tgt").weight) if self.generator is None else self.generator(y)


adapter = model_only(FirstLayerOnly, "heldout:fused_decoder_reuses_first_layer")
