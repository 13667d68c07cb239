"""A LayerNorm (gamma 1, beta 0) on the embeddings: LayerNorm(sqrt(d_model) E[token] + PE(pos)) enters the first layer.

Violates §3.4-3.5: the sum of the scaled embedding and the positional encoding is the first layer's input,
"we add positional encodings to the input embeddings". BERT and mBART (``layernorm_embedding``) normalise
that sum; the original does not, and its first sublayer's residual then carries the embedding's scale.
"""

from conformance.implementations.mutants._build import with_formulas
from conformance.implementations.reference.model import layer_norm


def normalised(x, eps):
    d = x.shape[-1]
    return layer_norm(x, x.new_ones(d), x.new_zeros(d), eps)  # the bug: a norm the paper does not have


adapter = with_formulas("embedding_layer_norm", embedding_norm=normalised)
