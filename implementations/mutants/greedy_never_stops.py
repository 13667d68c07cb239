"""Greedy decoding never stops a row at </s>: it generates max_len tokens for every row.

Violates §3's auto-regressive decoding as the lesson's "Greedy decoding" runs it ("At each step the
model is auto-regressive, consuming the previously generated symbols as additional input"): a row
ends at its first </s>, and holds only padding after it.
"""

import torch

from conformance.implementations.mutants._build import with_formulas


def greedy_without_stopping(model, src, max_len):
    memory = model.encode(src)
    ys = torch.full((src.shape[0], 1), model.config.bos_id, dtype=torch.long)
    for _ in range(max_len):
        ys = torch.cat([ys, model.decode(ys, memory, src)[:, -1].argmax(-1, keepdim=True)], dim=1)
    return ys[:, 1:]


adapter = with_formulas("greedy_never_stops", greedy_decode=greedy_without_stopping)
