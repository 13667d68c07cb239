"""Padding masks the query rows as well as the keys, with a -1e9 fill: a padded query reads every key, padding too.

Violates §3.2.3 as the lessons build the masks: the padding mask hides padded *keys* ("the padding mask
excludes the first input's two placeholder keys", "Vanilla Transformer"); a padded position is still a
query that reads the real keys. Masking its row too, with -1e9 instead of -inf, makes the row uniform over
all keys. Real positions are exactly the paper's; only the outputs at padded positions differ (and
change when more padding is appended), a deviation common in real code.
"""

import dataclasses
import functools

from conformance.implementations.mutants._build import LayerSwap, attention
from conformance.implementations.reference.model import REFERENCE, DecoderLayer, EncoderLayer


def rows(keep):  # (B, 1, L) key padding -> (B, L, 1): the same padding on the queries
    return keep.transpose(-1, -2)


class RowsAndKeysEncoderLayer(EncoderLayer):
    def forward(self, x, src_keep):
        return super().forward(x, None if src_keep is None else src_keep & rows(src_keep))


class RowsAndKeysDecoderLayer(DecoderLayer):
    def forward(self, y, memory, tgt_keep, src_keep):
        if tgt_keep is None:
            return super().forward(y, memory, tgt_keep, src_keep)
        padded_rows = rows(tgt_keep)
        cross = padded_rows if src_keep is None else src_keep & padded_rows
        return super().forward(y, memory, tgt_keep & padded_rows, cross)


class PaddedRowsFilled(LayerSwap):
    encoder_cls = RowsAndKeysEncoderLayer
    decoder_cls = RowsAndKeysDecoderLayer


adapter = PaddedRowsFilled(
    formulas=dataclasses.replace(REFERENCE, attention=functools.partial(attention, fill=-1e9)),
    name="mutant:query_rows_also_masked",
)
