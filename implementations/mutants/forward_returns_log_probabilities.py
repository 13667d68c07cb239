"""The model returns log-probabilities, log_softmax of the logits, where the logits are asked for.

Violates §3.4 as the protocol asks it: the decoder output goes through "the usual learned linear
transformation and softmax function", and ``forward`` / ``decode`` return the pre-softmax logits y E^T
(docs/adapter-protocol.md). The annotated transformer's ``Generator`` ends in ``log_softmax``: greedy
decoding is unchanged (the same argmax), but each logit now depends on every row of E through the
normaliser.
"""

import torch

from conformance.implementations.mutants._build import ModelSwap
from conformance.implementations.reference.adapter import ReferenceModel
from conformance.implementations.reference.model import REFERENCE, Transformer


class LogSoftmaxTransformer(Transformer):
    def decode(self, tgt_in, memory, src):
        return torch.log_softmax(super().decode(tgt_in, memory, src), dim=-1)  # the bug: normalised


class LogSoftmaxModel(ReferenceModel):
    def __init__(self, config, seed, formulas=REFERENCE, dtype=torch.float32):
        super().__init__(config, seed, formulas, dtype)
        self.module = LogSoftmaxTransformer(config, formulas, seed=seed).to(dtype)


class LogProbabilities(ModelSwap):
    model_class = LogSoftmaxModel


adapter = LogProbabilities(name="mutant:forward_returns_log_probabilities")
