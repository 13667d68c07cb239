"""No padding mask built from pad_id: every token is a real key, so padding leaks into real positions.

Violates §3.2.3 as the lesson builds the masks: padded source and target tokens are hidden keys, so
"illegal connections" to them get -inf before the softmax. Layers given a mask by the suite still
honour it; only the model, which must build the mask itself, reads the padding.
"""

import torch

from conformance.implementations.mutants._build import with_formulas

adapter = with_formulas("padding_mask_ignored",
                        padding_mask=lambda ids, pad_id: torch.ones_like(ids, dtype=torch.bool).unsqueeze(1))

CAUGHT_BY = {
    "appending_source_padding_leaves_logits_unchanged",
    "batch_equals_rows_run_one_at_a_time",
    "decode_matches_reference",
    "encode_matches_reference",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
    "trained_checkpoint_decodes_like_the_reference",
    "trained_checkpoint_matches_reference_on_fresh_inputs",
    "trained_checkpoint_outputs_match_golden",
}
ERRORED = set()
MESSAGES = {
    "encode_matches_reference": "(mutant:padding_mask_ignored), confirmed on a second",
    "batch_equals_rows_run_one_at_a_time": "(mutant:padding_mask_ignored), confirmed on a second",
}
