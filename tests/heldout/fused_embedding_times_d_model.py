"""Embeddings multiplied by d_model instead of sqrt(d_model), sequence-first fused-QKV torch model; model only."""

from _fused import model_only

from conformance.implementations.variants.fused_qkv_model import Seq2SeqTransformer, sinusoid_table


class ScaledByWidth(Seq2SeqTransformer):
    def embed(self, ids, side):
        d = self.cfg.d_model
        pe = sinusoid_table(ids.shape[0], d).to(self.table(side).weight)
        return self.drop(self.table(side)(ids) * d + pe[:, None, :])  # the bug: d, not sqrt(d)


adapter = model_only(ScaledByWidth, "heldout:fused_embedding_times_d_model")
