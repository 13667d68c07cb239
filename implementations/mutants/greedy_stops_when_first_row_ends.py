"""Greedy decoding stops the whole batch when the first row reaches </s>, not when every row has.

Violates §3's auto-regressive decoding as the lesson's "Greedy decoding" runs it: each row generates
until its own </s> (or max_len) and holds padding afterwards; a batch is done when every row is. A loop
that breaks on ``finished.any()`` instead of ``finished.all()`` cuts the longer rows short.
"""

import torch

from conformance.implementations.mutants._build import greedy_loop, with_formulas


def greedy_until_first_end(model, src, max_len):
    return greedy_loop(model, src, max_len, stop=torch.any)  # the bug: any, not all


adapter = with_formulas("greedy_stops_when_first_row_ends", greedy_decode=greedy_until_first_end)
