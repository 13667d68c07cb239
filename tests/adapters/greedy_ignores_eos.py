"""Mutant: greedy decoding never stops a row at </s>: it generates max_len tokens for every row."""

import torch
from _mutant import with_formulas


def greedy_without_stopping(model, src, max_len):
    memory = model.encode(src)
    ys = torch.full((src.shape[0], 1), model.config.bos_id, dtype=torch.long)
    for _ in range(max_len):
        ys = torch.cat([ys, model.decode(ys, memory, src)[:, -1].argmax(-1, keepdim=True)], dim=1)
    return ys[:, 1:]


adapter = with_formulas("greedy_ignores_eos", greedy_decode=greedy_without_stopping)


# What tests/test_catalogue.py requires when it certifies this mutant against the catalogue:
# exactly these checks fail (and error), and these messages name the bug.
CAUGHT_BY = (
    "greedy_decoding_stops_at_the_end_token_then_pads",
)
MESSAGES = {
    "greedy_decoding_stops_at_the_end_token_then_pads": "continues after </s>",
}
