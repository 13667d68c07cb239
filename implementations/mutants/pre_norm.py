"""Pre-norm x + Sublayer(LayerNorm(x)) instead of the paper's post-norm LayerNorm(x + Sublayer(x)).

Violates §3.1: "the output of each sub-layer is LayerNorm(x + Sublayer(x))". Pre-norm is the choice of
most later models (the lesson's "What changed since 2017"), not the original's.
"""

from conformance.implementations.mutants._build import with_formulas

adapter = with_formulas("pre_norm", sublayer=lambda x, fn, norm, dropout: x + dropout(fn(norm(x))))
