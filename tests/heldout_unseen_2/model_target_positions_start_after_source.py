"""§3.5 model whose decoder positions continue after the source: the target token at position t gets the
positional encoding PE(S + t), S the (padded) source length, as if source and target were one concatenated
sequence, where the paper adds PE(t) to the decoder's embedding at position t (each stack counts its positions
from 0). The encoder's positions, the embeddings' sqrt(d_model) factor and the layers are right.

Style: the torch nn.ModuleDict model of ``_parts.py`` with ``decode`` overridden (the position offset passed to
its own embedding step), float64; model only (``build_model``).
"""

import math

from _parts import Model, Seq2Seq, model_adapter, sinusoids


class ContinuedPositionsSeq2Seq(Seq2Seq):
    def decode(self, tgt_in, memory, src):
        d, S, T = self.cfg["d_model"], src.shape[1], tgt_in.shape[1]
        y = self.embed["tgt"](tgt_in) * math.sqrt(d) + sinusoids(S + T, d)[S:][None]
        y = y.transpose(0, 1)
        self_blocked = self.pad_blocked(tgt_in, T) | self.future_blocked(T)[None]
        cross_blocked = self.pad_blocked(src, T)
        for block in self.stacks["decoder"]:
            y = block(y, self_blocked, memory, cross_blocked)
        return self.generator(y).transpose(0, 1)


class ContinuedPositionsModel(Model):
    net_class = ContinuedPositionsSeq2Seq


adapter = model_adapter(ContinuedPositionsModel)
