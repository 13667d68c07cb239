"""Padding mask on the queries (rows) instead of the keys (columns): real positions read padding.

Violates §3.2.3 as the lesson builds the masks: the padding mask hides padded *keys*, so that no real
position reads a padding token ("masking out ... all values in the input of the softmax which
correspond to illegal connections"). Hiding the padded rows instead leaves every padded key visible,
in the encoder's and the decoder's self-attention.
"""

from conformance.implementations.mutants._build import LayerSwap
from conformance.implementations.reference.model import DecoderLayer, EncoderLayer


def rows(keep):  # (B, 1, L) -> (B, L, 1)
    return None if keep is None else keep.transpose(-1, -2)


class QueriesPaddedEncoderLayer(EncoderLayer):
    def forward(self, x, src_keep):
        return super().forward(x, rows(src_keep))


class QueriesPaddedDecoderLayer(DecoderLayer):
    def forward(self, y, memory, tgt_keep, src_keep):
        return super().forward(y, memory, rows(tgt_keep), src_keep)


class PaddingOnQueries(LayerSwap):
    encoder_cls = QueriesPaddedEncoderLayer
    decoder_cls = QueriesPaddedDecoderLayer


adapter = PaddingOnQueries(name="mutant:padding_on_queries")
