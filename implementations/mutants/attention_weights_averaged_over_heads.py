"""Attention weights returned averaged over the heads, (B, Lq, Lk), instead of one map per head.

Violates §3.2.2 as the protocol and the lessons' explorer show it: MultiHead(Q, K, V) has h heads,
each with its own attention map, (B, h, Lq, Lk). ``torch.nn.MultiheadAttention`` averages them by
default (average_attn_weights=True).
"""

from conformance.implementations.reference.adapter import ReferenceAdapter


class AveragedWeights(ReferenceAdapter):
    def multi_head_attention(self, query, key, value, weights, h, mask):
        out, attn = super().multi_head_attention(query, key, value, weights, h, mask)
        return out, attn.mean(axis=1)


adapter = AveragedWeights(name="mutant:attention_weights_averaged_over_heads")

CAUGHT_BY = {
    "base_model_shape[step=cross_attention]",
    "base_model_shape[step=masked_self_attention]",
    "explorer_shape[step=cross_attention]",
    "explorer_shape[step=encoder_self_attention]",
    "explorer_shape[step=masked_self_attention]",
    "guided_practice_masked_self_attention_hides_28_cells_per_head",
    "guided_practice_shape[step=cross_attention]",
    "guided_practice_shape[step=encoder_self_attention]",
    "guided_practice_shape[step=masked_self_attention]",
}
# The bug gives a wrong shape, which the suite's own validation reports as an error there.
ERRORED = {
    "causal_mask_hides_the_future_and_keeps_the_diagonal",
    "cross_attention_matches_reference",
    "head_i_reads_only_its_own_columns_of_W_Q_and_W_K",
    "masked_rows_sum_to_one_in_every_head",
    "masked_weights_are_exactly_zero_in_every_head",
    "masking_keys_equals_removing_them",
    "multi_head_attention_matches_reference_at_base_size",
    "self_attention_matches_reference",
}
ADVISORY = {
    "fully_masked_row_gives_zero_weights_and_only_b_O",
}
MESSAGES = {
    "explorer_shape[step=cross_attention]": "shape=(1, 6, 5), but should be (1, 4, 6, 5)",
}
