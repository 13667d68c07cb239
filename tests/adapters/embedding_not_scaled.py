"""Mutant: embeddings not multiplied by sqrt(d_model) (§3.4: "we multiply those weights by sqrt(d_model)")."""

from _mutant import with_formulas

adapter = with_formulas("embedding_not_scaled", embed_scale=lambda d_model: 1.0)


# What tests/test_catalogue.py requires when it certifies this mutant against the catalogue:
# exactly these checks fail (and error), and these messages name the bug.
CAUGHT_BY = (
    "decode_matches_reference",
    "encode_matches_reference",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
)
MESSAGES = {
    "encode_matches_reference": "likely cause: embeddings not multiplied by sqrt(d_model)",
    "logits_match_reference": "likely cause: embeddings not multiplied by sqrt(d_model)",
}
