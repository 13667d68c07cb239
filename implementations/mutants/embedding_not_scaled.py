"""Embeddings not multiplied by sqrt(d_model): x = E[token] + PE(pos).

Violates §3.4: "In the embedding layers, we multiply those weights by sqrt(d_model)." Without it the
positional encoding (values in [-1, 1]) swamps embeddings of spread d_model^-0.5.
"""

from conformance.implementations.mutants._build import with_formulas

adapter = with_formulas("embedding_not_scaled", embed_scale=lambda d_model: 1.0)
