"""Mutant: forward() runs the model in training mode, so dropout (0.1, §5.4) stays on at inference."""

import torch
from _mutant import ModelSwap

from conformance.implementations.reference.adapter import ReferenceModel, _ids, _numpy


class TrainModeModel(ReferenceModel):
    @torch.no_grad()
    def forward(self, src, tgt_in):
        return _numpy(self.module.train()(_ids(src), _ids(tgt_in)))


class DropoutAtInference(ModelSwap):
    model_class = TrainModeModel


adapter = DropoutAtInference(name="dropout_at_inference")


# What tests/test_catalogue.py requires when it certifies this mutant against the catalogue:
# exactly these checks fail (and error), and these messages name the bug.
CAUGHT_BY = (
    "logits_up_to_t_ignore_later_target_tokens",
    "appending_source_padding_leaves_logits_unchanged",
    "appending_target_padding_leaves_real_logits_unchanged",
    "batch_equals_rows_run_one_at_a_time",
    "evaluation_is_deterministic",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
    "changing_an_unused_embedding_row_changes_only_its_logit",
    "greedy_decoding_picks_the_argmax_at_every_step",
)
MESSAGES = {
    "evaluation_is_deterministic": "likely cause: dropout still active at inference",
}
