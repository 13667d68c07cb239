"""Logits divided by a temperature of 2 left in the model's forward, sequence-first fused-QKV torch; model only."""

from _fused import model_only

from conformance.implementations.variants.fused_qkv_model import Seq2SeqTransformer


class WithTemperature(Seq2SeqTransformer):
    def decode(self, tgt_in, memory, src):
        return super().decode(tgt_in, memory, src) / 2.0  # the bug: a sampling temperature at evaluation


adapter = model_only(WithTemperature, "heldout:fused_logits_temperature")
