"""Mutant: pre-norm x + Sublayer(LayerNorm(x)) instead of the paper's post-norm LayerNorm(x + Sublayer(x))
(§3.1), the choice of most later models ("What changed since 2017").
"""

from _mutant import with_formulas

adapter = with_formulas("pre_norm", sublayer=lambda x, fn, norm, dropout: x + dropout(fn(norm(x))))


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
    "logits_match_reference",
    "logits_match_reference_at_base_size",
)
MESSAGES = {
    "encoder_layer_matches_reference": "likely cause: pre-norm",
    "encode_matches_reference": "first divergence: encoder.0",
}
