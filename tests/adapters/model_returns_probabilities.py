"""A model (float64 NumPy) whose forward returns softmax probabilities where the logits are asked for. Its tied output
layer reads E[pad]: redrawing that row moves every probability at real positions through the softmax's normaliser,
though no decoder position reads the padding."""

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter, NumpyModel


class ProbabilitiesModel(NumpyModel):
    def forward(self, src, tgt_in):
        logits = super().forward(src, tgt_in)
        e = np.exp(logits - logits.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)


class Probabilities(NumpyAdapter):
    model_class = ProbabilitiesModel


adapter = Probabilities()
