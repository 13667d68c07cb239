"""Embeddings not multiplied by sqrt(d_model): x = E[token] + PE(pos).

Violates §3.4: "In the embedding layers, we multiply those weights by sqrt(d_model)." Without it the
positional encoding (values in [-1, 1]) swamps embeddings of spread d_model^-0.5.
"""

from conformance.implementations.mutants._build import with_formulas

adapter = with_formulas("embedding_not_scaled", embed_scale=lambda d_model: 1.0)

CAUGHT_BY = {
    "base_size_forward_matches_golden",
    "decode_matches_reference",
    "encode_matches_reference",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
    "trained_checkpoint_attention_matches_golden",
    "trained_checkpoint_decodes_like_the_reference",
    "trained_checkpoint_matches_reference_on_fresh_inputs",
    "trained_checkpoint_outputs_match_golden",
}
ERRORED = set()
MESSAGES = {
    "encode_matches_reference": "(mutant:embedding_not_scaled), confirmed on a second",
    "logits_match_reference": "(mutant:embedding_not_scaled), confirmed on a second",
}
