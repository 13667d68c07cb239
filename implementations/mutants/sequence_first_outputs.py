"""Outputs returned sequence-first, (L, B, ...), while the adapter declares batch_first=True.

Violates the adapter protocol's declared convention (the paper's tensors are per sentence, §3): the
memory, the logits and the layers' outputs come back transposed, as ``torch.nn.Transformer`` returns
them by default (batch_first=False).
"""

import numpy as np

from conformance.implementations.mutants._build import ModelSwap
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


adapter = SequenceFirst(name="mutant:sequence_first_outputs")

CAUGHT_BY = {
    "base_model_shape[step=logits]",
    "base_model_shape[step=memory]",
    "explorer_shape[step=logits]",
    "explorer_shape[step=memory]",
    "guided_practice_shape[step=logits]",
    "guided_practice_shape[step=memory]",
    "guided_practice_shape[step=target]",
}
# The bug gives a wrong shape, which the suite's own validation reports as an error there.
ERRORED = {
    "appending_source_padding_leaves_logits_unchanged",
    "appending_target_padding_leaves_real_logits_unchanged",
    "base_size_forward_matches_golden",
    "batch_equals_rows_run_one_at_a_time",
    "changing_an_unused_embedding_row_changes_only_its_logit",
    "changing_padded_source_positions_leaves_real_positions_unchanged",
    "cross_attention_reads_every_real_source_position",
    "decoder_layer_ignores_padded_target_and_source_keys",
    "decoder_layer_matches_reference",
    "decoder_layer_matches_reference_at_base_size",
    "decoder_output_up_to_t_ignores_later_positions",
    "decoder_position_reads_itself",
    "encode_matches_reference",
    "encoder_layer_is_permutation_equivariant",
    "encoder_layer_matches_reference",
    "encoder_layer_matches_reference_at_base_size",
    "evaluation_is_deterministic",
    "greedy_decoding_picks_the_argmax_at_every_step",
    "logits_match_reference",
    "logits_up_to_t_ignore_later_target_tokens",
    "logits_match_reference_at_base_size",
    "published_shapes_of_attention_weights",
    "published_shapes_of_memory_and_logits",
    "trained_checkpoint_matches_reference_on_fresh_inputs",
    "trained_checkpoint_outputs_match_golden",
}
MESSAGES = {
    "explorer_shape[step=memory]": "shape=(5, 1, 64), but should be (1, 5, 64)",
}
