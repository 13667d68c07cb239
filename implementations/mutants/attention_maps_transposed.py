"""model.attention_weights returns each map transposed, (B, h, keys, queries) instead of (B, h, queries, keys).

Violates §3.2.1 as the protocol and the lessons read the maps: softmax(Q K^T / sqrt(d_k)) has one row per
query and one column per key ("the attention weights have shape (T, S) and need not be square"), and each
row sums to 1. Handing out the scores' transpose (a ``weights.transpose(-1, -2)`` meant for plotting)
turns the lesson's anti-diagonal cross-attention into its mirror. The forward pass is right.
"""

import numpy as np

from conformance.implementations.mutants._build import ModelSwap
from conformance.implementations.reference.adapter import ReferenceModel

# What the diagnosis says where the decoder's self-attention weights show this bug's signature, the past at weight 0
# instead of the future (conformance/diagnosis/causal_patterns.py); a transposed mask hides the same cells.
SIGNATURES = {
    "causal_pattern": ("the past is hidden instead of the future: the maps returned transposed (keys, queries), or"
                       " the mask transposed"),
}


class TransposedMapsModel(ReferenceModel):
    def attention_weights(self, src, tgt_in):
        return {name: np.swapaxes(w, -1, -2) for name, w in super().attention_weights(src, tgt_in).items()}


class TransposedMaps(ModelSwap):
    model_class = TransposedMapsModel


adapter = TransposedMaps(name="mutant:attention_maps_transposed")
