"""A model whose logits from the third row of a batch on are offset by their row index (rows 0 and 1 alike): a
sentence's logits depend on its place in the batch, not on the other sentences (written by a red team)."""

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter, NumpyModel


class RowOffset(NumpyModel):
    def forward(self, src, tgt_in):
        out = np.array(super().forward(src, tgt_in))
        out[2:] += 1.0 + np.arange(max(len(out) - 2, 0))[:, None, None]  # the bug: the row index read
        return out


class Adapter(NumpyAdapter):
    model_class = RowOffset


adapter = Adapter()
