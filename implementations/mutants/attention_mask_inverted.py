"""Attention mask with its polarity inverted: the allowed keys are hidden and the forbidden ones read.

Violates §3.2.3: the mask "adds 0 at allowed positions and -inf at forbidden positions" ("Vanilla
Transformer"); the decoder reads "the strictly lower triangle" and the diagonal, and no real position
reads padding. Mixing the conventions (torch.nn's True = masked, the lessons' True = keep) inverts it:
a query then reads only what it must not, and a query with nothing hidden reads nothing.
"""

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter

# What the diagnosis says where the decoder's self-attention weights show this bug's signature, the allowed keys at
# weight 0 (conformance/diagnosis/causal_patterns.py).
SIGNATURES = {
    "causal_pattern": "the allowed keys are hidden and the future is read: the mask's polarity inverted",
}


class MaskInverted(NumpyAdapter):
    def mask_scores(self, scores, additive):
        if additive is None:
            return scores
        return np.where(np.isneginf(additive), scores, -np.inf)  # the bug: -inf where a key is allowed


adapter = MaskInverted()
