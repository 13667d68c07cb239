"""Positional encoding added twice at the bottom of each stack (once in the embedding, once more before the first
layer), in a sequence-first torch model with a fused QKV projection; model only."""

import math

from _fused import model_only

from conformance.implementations.variants.fused_qkv_model import Seq2SeqTransformer, sinusoid_table


class PositionsTwice(Seq2SeqTransformer):
    def embed(self, ids, side):
        d = self.cfg.d_model
        pe = sinusoid_table(ids.shape[0], d).to(self.table(side).weight)[:, None, :]
        x = self.table(side)(ids) * math.sqrt(d) + pe
        return self.drop(x + pe)  # the bug: the stack's input adds the table again


adapter = model_only(PositionsTwice, "heldout:fused_positions_twice")
