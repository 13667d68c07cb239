"""Outputs returned sequence-first, (L, B, ...), while the adapter declares batch_first=True.

Violates the adapter protocol's declared convention (the paper's tensors are per sentence, §3): the
memory, the logits and the layers' outputs come back transposed, as ``torch.nn.Transformer`` returns
them by default (batch_first=False).
"""

import numpy as np

from conformance.implementations.mutants._build import ModelSwap
from conformance.implementations.reference.adapter import ReferenceModel


def seq_first(x):
    return np.swapaxes(x, 0, 1)


class SequenceFirstModel(ReferenceModel):
    def forward(self, src, tgt_in):
        return seq_first(super().forward(src, tgt_in))

    def encode(self, src):
        return seq_first(super().encode(src))


class SequenceFirst(ModelSwap):
    model_class = SequenceFirstModel

    def encoder_layer(self, *args):
        return seq_first(super().encoder_layer(*args))

    def decoder_layer(self, *args):
        return seq_first(super().decoder_layer(*args))


adapter = SequenceFirst(name="mutant:sequence_first_outputs")
