"""Encoder blocks called without the source padding mask (the decoder's cross-attention still masks it),
sequence-first fused-QKV torch; model only."""

from _fused import model_only

from conformance.implementations.variants.fused_qkv_model import Seq2SeqTransformer


class EncoderReadsPadding(Seq2SeqTransformer):
    def encode(self, src):
        x = self.embed(src, "src")
        for block in self.encoder:
            x = block(x, None)  # the bug: no src_pad
        return x


adapter = model_only(EncoderReadsPadding, "heldout:fused_encoder_no_padding_mask")
