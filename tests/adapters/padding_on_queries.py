"""Mutant: the self-attention's padding mask hides the padded *queries* (rows) instead of the padded
keys (columns) (§3.2.3), in the encoder and in the decoder: real positions then read padding.
"""

from _mutant import LayerSwap

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


adapter = PaddingOnQueries(name="padding_on_queries")


# What tests/test_catalogue.py requires when it certifies this mutant against the catalogue:
# exactly these checks fail (and error), and these messages name the bug.
CAUGHT_BY = (
    "decoder_layer_matches_reference",
    "decoder_layer_matches_reference_at_base_size",
    "decode_matches_reference",
    "encoder_layer_matches_reference",
    "encoder_layer_matches_reference_at_base_size",
    "encode_matches_reference",
    "appending_source_padding_leaves_logits_unchanged",
    "batch_equals_rows_run_one_at_a_time",
    "changing_padded_source_positions_leaves_real_positions_unchanged",
    "padded_query_rows_still_follow_the_formula",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
)
MESSAGES = {
    "encoder_layer_matches_reference": "likely cause: padding applied to the queries instead of the keys",
    "padded_query_rows_still_follow_the_formula": "likely cause: padding applied to the queries (rows)",
}
