"""Greedy decoding does not feed its output back: every step decodes from <s> alone.

Violates §3: "At each step the model is auto-regressive, consuming the previously generated symbols as
additional input when generating the next." Decoding only <s> at each step predicts the first token
again and again.
"""

from conformance.implementations.mutants._build import greedy_loop, with_formulas


def greedy_without_feedback(model, src, max_len):
    return greedy_loop(model, src, max_len, feed_back=False)  # the bug: <s> alone, not ys


adapter = with_formulas("greedy_does_not_feed_back", greedy_decode=greedy_without_feedback)
