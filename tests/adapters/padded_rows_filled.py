"""Padding applied to the query rows as well as the keys, with a finite fill (-1e9): a padded query
row is fully masked and its softmax is uniform over every key, padding included.

Real positions are exactly the paper's; only the outputs at padded positions differ, and they change
when more padding is appended. A real deviation (issue "Name every deviation of real code"), used here
to show that a claim about the *real* logits looks at real positions only.
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
    name="padded-rows-filled",
)
