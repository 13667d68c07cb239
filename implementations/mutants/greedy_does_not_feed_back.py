"""Greedy decoding does not feed its output back: every step decodes from <s> alone.

Violates §3: "At each step the model is auto-regressive, consuming the previously generated symbols as
additional input when generating the next." Decoding only <s> at each step predicts the first token
again and again.
"""

import torch

from conformance.implementations.mutants._build import with_formulas


def greedy_without_feedback(model, src, max_len):
    cfg = model.config
    memory = model.encode(src)
    start = torch.full((src.shape[0], 1), cfg.bos_id, dtype=torch.long)
    ys, finished = start, torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        next_id = model.decode(start, memory, src)[:, -1].argmax(-1)  # the bug: start, not ys
        next_id = torch.where(finished, cfg.pad_id, next_id)
        ys = torch.cat([ys, next_id.unsqueeze(1)], dim=1)
        finished |= next_id == cfg.eos_id
        if bool(finished.all()):
            break
    return ys[:, 1:]


adapter = with_formulas("greedy_does_not_feed_back", greedy_decode=greedy_without_feedback)
