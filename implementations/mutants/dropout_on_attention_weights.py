"""Dropout on the attention weights: softmax(Q K^T / sqrt(d_k)) is dropped before it multiplies V, in every attention.

Goes beyond §5.4, which lists where the paper's dropout acts: "the output of each sub-layer" and "the sums of the
embeddings and the positional encodings", nothing inside a sublayer. ``torch.nn.MultiheadAttention(dropout=...)``,
the Annotated Transformer and most libraries drop the attention weights too (tensor2tensor's ``attention_dropout``,
0 in the paper's base configuration). Evaluation never shows it: only a training-mode computation does.
"""

from torch.nn import functional as F

from conformance.implementations.mutants._build import InsideModules
from conformance.implementations.reference.model import MultiHeadAttention


def dropping_weights(module: MultiHeadAttention, p: float):
    """The module's attention formula with its weights dropped at rate ``p`` while it trains."""
    attention = module.formulas.attention

    def attend(q, k, v, keep):
        _, weights = attention(q, k, v, keep)
        return F.dropout(weights, p, module.training) @ v, weights  # the bug: dropout inside the sublayer

    return attend


adapter = InsideModules("dropout_on_attention_weights", MultiHeadAttention, "attention", dropping_weights)
