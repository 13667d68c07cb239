"""Mutant: GELU instead of ReLU in the feed-forward network (§3.3: FFN(x) = max(0, x W1 + b1) W2 + b2)."""

from _mutant import with_formulas
from torch.nn import functional

adapter = with_formulas("relu_to_gelu", activation=functional.gelu)


# What tests/test_catalogue.py requires when it certifies this mutant against the catalogue:
# exactly these checks fail (and error), and these messages name the bug.
CAUGHT_BY = (
    "decoder_layer_matches_reference",
    "decoder_layer_matches_reference_at_base_size",
    "decode_matches_reference",
    "encoder_layer_matches_reference",
    "encoder_layer_matches_reference_at_base_size",
    "encode_matches_reference",
    "feed_forward_matches_reference",
    "feed_forward_matches_reference_at_base_size",
    "padded_query_rows_still_follow_the_formula",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
)
MESSAGES = {
    "feed_forward_matches_reference": "likely cause: GELU instead of ReLU",
    "decode_matches_reference": "first divergence: decoder.0 (feed-forward sublayer suspected)",
}
