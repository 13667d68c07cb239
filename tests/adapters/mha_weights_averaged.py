"""Mutant: multi_head_attention returns the weights averaged over the heads, (B, Lq, Lk), as
``torch.nn.MultiheadAttention`` does by default (average_attn_weights=True); the protocol and the
lessons' explorer show one map per head, (B, h, Lq, Lk).
"""

from conformance.implementations.reference.adapter import ReferenceAdapter


class AveragedWeights(ReferenceAdapter):
    def multi_head_attention(self, query, key, value, weights, h, mask):
        out, attn = super().multi_head_attention(query, key, value, weights, h, mask)
        return out, attn.mean(axis=1)


adapter = AveragedWeights(name="mha_weights_averaged")


# What tests/test_catalogue.py requires when it certifies this mutant against the catalogue:
# exactly these checks fail (and error), and these messages name the bug.
CAUGHT_BY = (
    "explorer_shape[step=encoder_self_attention]",
    "explorer_shape[step=masked_self_attention]",
    "explorer_shape[step=cross_attention]",
    "guided_practice_shape[step=encoder_self_attention]",
    "guided_practice_shape[step=masked_self_attention]",
    "guided_practice_shape[step=cross_attention]",
    "guided_practice_masked_self_attention_hides_28_cells_per_head",
    "base_model_shape[step=masked_self_attention]",
    "base_model_shape[step=cross_attention]",
)
# The bug gives a wrong shape, which the suite's own validation reports as an error there.
ERRORED = (
    "masked_weights_are_exactly_zero_in_every_head",
    "masked_rows_sum_to_one_in_every_head",
    "causal_mask_hides_the_future_and_keeps_the_diagonal",
    "fully_masked_row_gives_zero_weights_and_only_b_O",
    "masking_keys_equals_removing_them",
    "self_attention_matches_reference",
    "cross_attention_matches_reference",
    "multi_head_attention_matches_reference_at_base_size",
    "head_i_reads_only_its_own_columns_of_W_Q_and_W_K",
)
MESSAGES = {
    "explorer_shape[step=cross_attention]": "shape=(1, 6, 5), but should be (1, 4, 6, 5)",
}
