"""Positional encoding counts positions from 1: the first token gets PE(1) instead of PE(0).

Violates §3.5 as the lesson's Step 2 applies it: positions are 0, 1, 2, ... ("pos is the position"),
so the first token's encoding is (0, 1, 0, 1, ...).
"""

from conformance.implementations.mutants._build import with_formulas
from conformance.implementations.reference.model import sinusoidal_positional_encoding


def positional_encoding_from_one(n, d_model):
    return sinusoidal_positional_encoding(n + 1, d_model)[1:]  # rows for positions 1..n


adapter = with_formulas("pe_positions_from_one", positional_encoding=positional_encoding_from_one)
