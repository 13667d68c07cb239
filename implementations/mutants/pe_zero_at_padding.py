"""Positional encoding left out at padded positions: a padding token's input is sqrt(d_model) * E[pad], no PE.

Violates §3.5: "we add 'positional encodings' to the input embeddings", at every position; the paper's
model gives a padding token the same input formula as any other (padding hides *keys*, §3.2.3, it changes
no input). fairseq's ``SinusoidalPositionalEmbedding`` (Hugging Face's FSMT, ``modeling_fsmt.py``) gives
padding tokens the position ``padding_idx`` and zeroes that row of its table. Real positions' outputs are
the paper's (padding is masked as a key); what the stacks return at padded positions differs.
"""

import math

from conformance.implementations.numpy_impl.adapter import NumpyAdapter, NumpyModel


class NoEncodingAtPaddingModel(NumpyModel):
    def _embed(self, ids, side):
        d_model = self.config.d_model
        pe = self.adapter.sinusoids(ids.shape[1], d_model)[None] * (ids != self.config.pad_id)[..., None]  # the bug
        return self._table(side)[ids] * math.sqrt(d_model) + pe


class ZeroEncodingAtPadding(NumpyAdapter):
    model_class = NoEncodingAtPaddingModel


adapter = ZeroEncodingAtPadding()
