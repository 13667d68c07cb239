"""Mutant: the model builds no padding mask from pad_id (every token is a real key), so the padding of a
batch leaks into the real positions (§3.2.3). Layers given a mask by the suite still honour it.
"""

import torch
from _mutant import with_formulas

adapter = with_formulas("padding_mask_ignored",
                        padding_mask=lambda ids, pad_id: torch.ones_like(ids, dtype=torch.bool).unsqueeze(1))


# What tests/test_catalogue.py requires when it certifies this mutant against the catalogue:
# exactly these checks fail (and error), and these messages name the bug.
CAUGHT_BY = (
    "decode_matches_reference",
    "encode_matches_reference",
    "appending_source_padding_leaves_logits_unchanged",
    "batch_equals_rows_run_one_at_a_time",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
)
MESSAGES = {
    "encode_matches_reference": "likely cause: no padding mask built from pad_id",
    "batch_equals_rows_run_one_at_a_time": "likely cause: padding is read as content",
}
