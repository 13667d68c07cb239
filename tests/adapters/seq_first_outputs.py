"""Mutant: declares batch_first=True but returns activations sequence-first, (L, B, ...), as
torch.nn.Transformer does by default (batch_first=False): the memory, the logits and the layers' outputs.
"""

import numpy as np
from _mutant import ModelSwap

from conformance.implementations.reference.adapter import ReferenceModel


def seq_first(x):
    return np.swapaxes(x, 0, 1)


class SequenceFirstModel(ReferenceModel):
    def forward(self, src, tgt_in):
        return seq_first(super().forward(src, tgt_in))

    def encode(self, src):
        return seq_first(super().encode(src))


class SequenceFirst(ModelSwap):
    model_class = SequenceFirstModel

    def encoder_layer(self, *args):
        return seq_first(super().encoder_layer(*args))

    def decoder_layer(self, *args):
        return seq_first(super().decoder_layer(*args))


adapter = SequenceFirst(name="seq_first_outputs")


# What tests/test_catalogue.py requires when it certifies this mutant against the catalogue:
# exactly these checks fail (and error), and these messages name the bug.
CAUGHT_BY = (
    "explorer_shape[step=memory]",
    "explorer_shape[step=logits]",
    "guided_practice_shape[step=memory]",
    "guided_practice_shape[step=target]",
    "guided_practice_shape[step=logits]",
    "base_model_shape[step=memory]",
    "base_model_shape[step=logits]",
)
# The bug gives a wrong shape, which the suite's own validation reports as an error there.
ERRORED = (
    "decoder_layer_matches_reference",
    "decoder_layer_matches_reference_at_base_size",
    "encoder_layer_matches_reference",
    "encoder_layer_matches_reference_at_base_size",
    "encode_matches_reference",
    "logits_up_to_t_ignore_later_target_tokens",
    "appending_source_padding_leaves_logits_unchanged",
    "appending_target_padding_leaves_real_logits_unchanged",
    "batch_equals_rows_run_one_at_a_time",
    "encoder_layer_is_permutation_equivariant",
    "evaluation_is_deterministic",
    "changing_padded_source_positions_leaves_real_positions_unchanged",
    "padded_query_rows_still_follow_the_formula",
    "decoder_layer_ignores_padded_target_and_source_keys",
    "decoder_output_up_to_t_ignores_later_positions",
    "decoder_position_reads_itself",
    "cross_attention_reads_every_real_source_position",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
    "changing_an_unused_embedding_row_changes_only_its_logit",
    "greedy_decoding_picks_the_argmax_at_every_step",
)
MESSAGES = {
    "explorer_shape[step=memory]": "shape=(5, 1, 64), but should be (1, 5, 64)",
}
