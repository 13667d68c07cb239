"""Mutant: no residual connection, LayerNorm(Sublayer(x)) instead of LayerNorm(x + Sublayer(x)) (§3.1)."""

from _mutant import with_formulas

adapter = with_formulas("missing_residual", sublayer=lambda x, fn, norm, dropout: norm(dropout(fn(x))))


# What tests/test_catalogue.py requires when it certifies this mutant against the catalogue:
# exactly these checks fail (and error), and these messages name the bug.
CAUGHT_BY = (
    "decoder_layer_matches_reference",
    "decoder_layer_matches_reference_at_base_size",
    "decode_matches_reference",
    "encoder_layer_matches_reference",
    "encoder_layer_matches_reference_at_base_size",
    "encode_matches_reference",
    "padded_query_rows_still_follow_the_formula",
    "decoder_output_up_to_t_ignores_later_positions",
    "decoder_position_reads_itself",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
)
MESSAGES = {
    "decoder_layer_matches_reference": "likely cause: no residual connection",
}
