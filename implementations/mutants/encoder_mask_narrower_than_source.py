"""Encoder padding mask built from the lengths, max(length) keys wide, not the source's width: trailing padding leaks.

Violates §3.2.3 as the lesson builds the masks: every padded source token is a hidden key. OpenNMT-py 3.0.4's
encoder (``onmt/encoders/transformer.py``: ``~sequence_mask(src_len)``, ``onmt/utils/misc.py``) builds its
mask from the sentence lengths, as wide as the longest sentence of the batch; a source padded past that is
wider than its mask. Where every sentence is one token long the (B, 1, 1) mask broadcasts over every key
and the padding is read; for any other narrower width the masked fill raises (shapes do not broadcast).
The decoder's cross-attention is given the source's width (``decoders/transformer.py``) and masks it right.
"""

import torch

from conformance.implementations.mutants._build import ModelSwap
from conformance.implementations.reference.adapter import ReferenceModel
from conformance.implementations.reference.model import Transformer


class LengthMaskTransformer(Transformer):
    def encode(self, src):
        lengths = (src != self.config.pad_id).sum(1)  # (B,)
        width = int(lengths.max()) if src.shape[0] else 0
        src_keep = (torch.arange(width) < lengths[:, None]).unsqueeze(1)  # the bug: (B, 1, max length), not S
        x = self.embed(src, self.src_embedding)
        for layer in self.encoder:
            x = layer(x, src_keep)
        return x


class LengthMaskModel(ReferenceModel):
    def __init__(self, config, seed, formulas):
        super().__init__(config, seed, formulas)
        self.module = LengthMaskTransformer(config, formulas, seed=seed)


class EncoderMaskNarrowerThanSource(ModelSwap):
    model_class = LengthMaskModel


adapter = EncoderMaskNarrowerThanSource(name="mutant:encoder_mask_narrower_than_source")
