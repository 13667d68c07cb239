"""Encoder padding mask built from the lengths, max(length) keys wide, not the source's width: trailing padding leaks.

Violates §3.2.3 as the lesson builds the masks: every padded source token is a hidden key. OpenNMT-py 3.0.4's
encoder (``onmt/encoders/transformer.py``: ``~sequence_mask(src_len)``, ``onmt/utils/misc.py``) builds its
mask from the sentence lengths, as wide as the longest sentence of the batch; a source padded past that is
wider than its mask. Where every sentence is one token long the (B, 1, 1) mask broadcasts over every key
and the padding is read; for any other narrower width the masked fill raises (shapes do not broadcast).
The decoder's cross-attention is given the source's width (``decoders/transformer.py``) and masks it right.
"""

import torch

from conformance.implementations.mutants._build import with_formulas


def length_mask(src, pad_id):
    """(B, 1, max length) from the lengths, as ``~sequence_mask(src_len)``: not the source's S keys."""
    lengths = (src != pad_id).sum(1)  # (B,)
    width = int(lengths.max()) if src.shape[0] else 0
    return (torch.arange(width, device=src.device) < lengths[:, None]).unsqueeze(1)  # the bug: max length wide


adapter = with_formulas("encoder_mask_narrower_than_source", encoder_padding_mask=length_mask)
