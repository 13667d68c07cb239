"""A model (float64 NumPy) whose padding masks are taken over the batch: a position padded in any sentence is hidden
in every sentence (``(ids == pad).any(0)``), so a sentence's logits depend on the others' padding, not on its row."""

import numpy as np

from conformance.implementations.numpy_impl import adapter as numpy_impl
from conformance.implementations.numpy_impl.adapter import NumpyAdapter, NumpyModel


def batch_padding(ids, pad_id, dtype=np.float64):
    hidden = (np.asarray(ids) == pad_id).any(axis=0, keepdims=True)  # the bug: one mask for the whole batch
    return np.broadcast_to(np.where(hidden, -np.inf, 0.0), np.shape(ids)).astype(dtype)


class BatchMasked(NumpyModel):
    def encode(self, src, *, attention=None):
        with _masks(batch_padding):
            return super().encode(src, attention=attention)

    def decode(self, tgt_in, memory, src, *, attention=None):
        with _masks(batch_padding):
            return super().decode(tgt_in, memory, src, attention=attention)


class _masks:
    """The oracle's padding mask swapped for ``build`` while a call runs."""

    def __init__(self, build):
        self.build = build

    def __enter__(self):
        self.kept, numpy_impl._additive_padding = numpy_impl._additive_padding, self.build

    def __exit__(self, *exc):
        numpy_impl._additive_padding = self.kept


class Adapter(NumpyAdapter):
    model_class = BatchMasked


adapter = Adapter()
