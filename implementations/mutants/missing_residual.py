"""No residual connection: LayerNorm(Sublayer(x)) instead of LayerNorm(x + Sublayer(x)).

Violates §3.1: "We employ a residual connection around each of the two sub-layers, followed by layer
normalization. That is, the output of each sub-layer is LayerNorm(x + Sublayer(x))."
"""

from conformance.implementations.mutants._build import with_formulas

adapter = with_formulas("missing_residual", sublayer=lambda x, fn, norm, dropout: norm(dropout(fn(x))))
