"""A model (float64 NumPy) whose decoder's cross-attention hides no source padding: real target positions read the
padded memory (the encoder masks its padding as the paper does)."""

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter, NumpyModel, _additive_padding


class SourcePaddingRead(NumpyModel):
    def decode(self, tgt_in, memory, src, *, attention=None):
        cfg = self.config
        tgt_in = np.asarray(tgt_in, dtype=np.int64)
        tgt_mask = _additive_padding(tgt_in, cfg.pad_id, self.adapter.dtype)
        src_mask = np.zeros(np.shape(src), dtype=self.adapter.dtype)  # the bug: the source's padding not hidden
        y = self._embed(tgt_in, "tgt")
        for layer in range(cfg.N):
            y = self.adapter.decoder_layer(y, np.asarray(memory, self.adapter.dtype),
                                           self._layer_weights(f"decoder.{layer}."), cfg.h, cfg.eps, tgt_mask, src_mask)
        return self._logits(y)


class Adapter(NumpyAdapter):
    model_class = SourcePaddingRead


adapter = Adapter()
