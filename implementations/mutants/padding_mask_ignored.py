"""No padding mask built from pad_id: every token is a real key, so padding leaks into real positions.

Violates §3.2.3 as the lesson builds the masks: padded source and target tokens are hidden keys, so
"illegal connections" to them get -inf before the softmax. Layers given a mask by the suite still
honour it; only the model, which must build the mask itself, reads the padding.
"""

import torch

from conformance.implementations.mutants._build import with_formulas


def every_token_real(ids, pad_id):
    return torch.ones_like(ids, dtype=torch.bool).unsqueeze(1)  # the bug: pad_id never read


adapter = with_formulas("padding_mask_ignored", padding_mask=every_token_real, encoder_padding_mask=every_token_real)
