"""GELU instead of ReLU in the feed-forward network.

Violates §3.3: FFN(x) = max(0, x W1 + b1) W2 + b2, "two linear transformations with a ReLU activation
in between" (GELU is BERT's and GPT's choice, not the original Transformer's).
"""

from torch.nn import functional

from conformance.implementations.mutants._build import with_formulas

adapter = with_formulas("gelu_instead_of_relu", activation=functional.gelu)

CAUGHT_BY = {
    "base_size_forward_matches_golden",
    "decode_matches_reference",
    "decoder_layer_matches_reference",
    "decoder_layer_matches_reference_at_base_size",
    "encode_matches_reference",
    "encoder_layer_matches_reference",
    "encoder_layer_matches_reference_at_base_size",
    "feed_forward_matches_reference",
    "feed_forward_matches_reference_at_base_size",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
    "trained_checkpoint_attention_matches_golden",
    "trained_checkpoint_matches_reference_on_fresh_inputs",
    "trained_checkpoint_outputs_match_golden",
}
ERRORED = set()
MESSAGES = {
    "feed_forward_matches_reference": "likely cause: GELU instead of ReLU",
    "decode_matches_reference": "first divergence: decoder.0 (feed-forward sublayer suspected)",
}
