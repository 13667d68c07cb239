"""Dropout on the feed-forward network's hidden layer: max(0, x W1 + b1) is dropped before it multiplies W2.

Goes beyond §5.4, which lists where the paper's dropout acts: "the output of each sub-layer" and "the sums of the
embeddings and the positional encodings", nothing inside a sublayer. ``torch.nn.TransformerEncoderLayer`` and the
Annotated Transformer drop the hidden layer too (tensor2tensor's ``relu_dropout``, 0 in the paper's base
configuration). Evaluation never shows it: only a training-mode computation does.
"""

import dataclasses

import torch
from torch.nn import functional as F

from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import FeedForward


def dropping_hidden(module: FeedForward, p: float):
    return lambda z: F.dropout(torch.relu(z), p, module.training)  # the bug: dropout inside the sublayer


class HiddenDropout(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        for module in model.module.modules():
            if isinstance(module, FeedForward):
                module.formulas = dataclasses.replace(module.formulas,
                                                      activation=dropping_hidden(module, model.config.dropout))
        return model


adapter = HiddenDropout(name="mutant:dropout_on_ffn_hidden")
