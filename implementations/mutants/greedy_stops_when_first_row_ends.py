"""Greedy decoding stops the whole batch when the first row reaches </s>, not when every row has.

Violates §3's auto-regressive decoding as the lesson's "Greedy decoding" runs it: each row generates
until its own </s> (or max_len) and holds padding afterwards; a batch is done when every row is. A loop
that breaks on ``finished.any()`` instead of ``finished.all()`` cuts the longer rows short.
"""

import torch

from conformance.implementations.mutants._build import with_formulas


def greedy_until_first_end(model, src, max_len):
    cfg = model.config
    memory = model.encode(src)
    ys = torch.full((src.shape[0], 1), cfg.bos_id, dtype=torch.long)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        next_id = model.decode(ys, memory, src)[:, -1].argmax(-1)
        next_id = torch.where(finished, cfg.pad_id, next_id)
        ys = torch.cat([ys, next_id.unsqueeze(1)], dim=1)
        finished |= next_id == cfg.eos_id
        if bool(finished.any()):  # the bug: any, not all
            break
    return ys[:, 1:]


adapter = with_formulas("greedy_stops_when_first_row_ends", greedy_decode=greedy_until_first_end)
