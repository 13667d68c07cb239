"""model.attention_weights returns each map transposed, (B, h, keys, queries) instead of (B, h, queries, keys).

Violates §3.2.1 as the protocol and the lessons read the maps: softmax(Q K^T / sqrt(d_k)) has one row per
query and one column per key ("the attention weights have shape (T, S) and need not be square"), and each
row sums to 1. Handing out the scores' transpose (a ``weights.transpose(-1, -2)`` meant for plotting)
turns the lesson's anti-diagonal cross-attention into its mirror. The forward pass is right.
"""

import numpy as np

from conformance.implementations.mutants._build import ModelSwap
from conformance.implementations.reference.adapter import ReferenceModel


class TransposedMapsModel(ReferenceModel):
    def attention_weights(self, src, tgt_in):
        return {name: np.swapaxes(w, -1, -2) for name, w in super().attention_weights(src, tgt_in).items()}


class TransposedMaps(ModelSwap):
    model_class = TransposedMapsModel


adapter = TransposedMaps(name="mutant:attention_maps_transposed")
