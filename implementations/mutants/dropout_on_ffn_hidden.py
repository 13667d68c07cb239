"""Dropout on the feed-forward network's hidden layer: max(0, x W1 + b1) is dropped before it multiplies W2.

Goes beyond §5.4, which lists where the paper's dropout acts: "the output of each sub-layer" and "the sums of the
embeddings and the positional encodings", nothing inside a sublayer. ``torch.nn.TransformerEncoderLayer`` and the
Annotated Transformer drop the hidden layer too (tensor2tensor's ``relu_dropout``, 0 in the paper's base
configuration). Evaluation never shows it: only a training-mode computation does.
"""

import torch
from torch.nn import functional as F

from conformance.implementations.mutants._build import InsideModules
from conformance.implementations.reference.model import FeedForward


def dropping_hidden(module: FeedForward, p: float):
    return lambda z: F.dropout(torch.relu(z), p, module.training)  # the bug: dropout inside the sublayer


adapter = InsideModules("dropout_on_ffn_hidden", FeedForward, "activation", dropping_hidden)
