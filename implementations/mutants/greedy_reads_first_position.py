"""Greedy decoding takes each next token from the first position's logits instead of the last's.

Violates §3's auto-regressive decoding as the lesson's "Greedy decoding" runs it: the next token is
the argmax of the distribution at the last position, ``model.decode(ys, memory, src)[:, -1]``; position
0 only ever predicts the first token.
"""

from conformance.implementations.mutants._build import greedy_loop, with_formulas


def greedy_from_first_position(model, src, max_len):
    return greedy_loop(model, src, max_len, position=0)  # the bug: position 0, not -1


adapter = with_formulas("greedy_reads_first_position", greedy_decode=greedy_from_first_position)
