"""No causal mask in the decoder self-attention: position t reads the future.

Violates §3.2.3: "We need to prevent leftward information flow in the decoder to preserve the
auto-regressive property. We implement this inside of scaled dot-product attention by masking out
(setting to -inf) all values in the input of the softmax which correspond to illegal connections."
"""

import torch

from conformance.implementations.mutants._build import with_formulas

# What the diagnosis says where the decoder's self-attention weights show this bug's signature, no key at weight 0
# (conformance/diagnosis/causal_patterns.py); two other bugs hide nothing either, and the sentence names them.
SIGNATURES = {
    "causal_pattern": ("no key gets weight 0: no causal mask in the decoder's self-attention, an attention that"
                       " ignores its mask, or hidden scores filled with a finite value (0) instead of -inf"),
}

adapter = with_formulas("no_causal_mask", causal_mask=lambda T: torch.ones(T, T, dtype=torch.bool))
