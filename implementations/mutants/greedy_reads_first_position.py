"""Greedy decoding takes each next token from the first position's logits instead of the last's.

Violates §3's auto-regressive decoding as the lesson's "Greedy decoding" runs it: the next token is
the argmax of the distribution at the last position, ``model.decode(ys, memory, src)[:, -1]``; position
0 only ever predicts the first token.
"""

import torch

from conformance.implementations.mutants._build import with_formulas


def greedy_from_first_position(model, src, max_len):
    cfg = model.config
    memory = model.encode(src)
    ys = torch.full((src.shape[0], 1), cfg.bos_id, dtype=torch.long)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        next_id = model.decode(ys, memory, src)[:, 0].argmax(-1)  # the bug: position 0, not -1
        next_id = torch.where(finished, cfg.pad_id, next_id)
        ys = torch.cat([ys, next_id.unsqueeze(1)], dim=1)
        finished |= next_id == cfg.eos_id
        if bool(finished.all()):
            break
    return ys[:, 1:]


adapter = with_formulas("greedy_reads_first_position", greedy_decode=greedy_from_first_position)
