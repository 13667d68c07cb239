"""Mask applied after the softmax (weights * keep): masked weights are 0 but the rows no longer sum to 1.

Violates §3.2.3: masking happens inside the softmax, "by masking out (setting to -inf) all values in
the input of the softmax which correspond to illegal connections", so the visible weights still sum to 1.
"""

from conformance.implementations.mutants._build import with_attention

adapter = with_attention("mask_after_softmax", mask_after_softmax=True)
