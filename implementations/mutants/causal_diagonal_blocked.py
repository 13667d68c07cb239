"""Causal mask blocks the diagonal too (tril(-1)): a position cannot read itself, the start token reads nothing.

Violates §3.2.3: the decoder's self-attention lets "each position in the decoder attend to all
positions in the decoder up to and including that position"; the diagonal stays visible.
"""

import torch

from conformance.implementations.mutants._build import with_formulas

# What the diagnosis says where the decoder's self-attention weights show this bug's signature, the future and the
# diagonal at weight 0 (conformance/diagnosis/causal_patterns.py).
SIGNATURES = {
    "causal_pattern": "the diagonal is hidden too: the causal mask built with tril(-1), a position cannot read itself",
}

adapter = with_formulas("causal_diagonal_blocked", causal_mask=lambda T: torch.ones(T, T, dtype=torch.bool).tril(-1))
