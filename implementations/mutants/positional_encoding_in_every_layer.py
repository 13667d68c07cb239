"""The positional encoding is added again at the input of every encoder and decoder layer.

Violates §3.5: "we add 'positional encodings' to the input embeddings at the bottoms of the encoder and
decoder stacks", once. Inside a layer nothing depends on the order of the positions: "Without
positional information or an order-dependent mask, self-attention is permutation-equivariant"
("Vanilla Transformer"). Adding PE in each layer makes the encoder layer depend on where a token sits.
"""

from conformance.implementations.mutants._build import LayerSwap
from conformance.implementations.reference.model import DecoderLayer, EncoderLayer


def positions(formulas, x):
    """PE(0..L-1) for x (B, L, d_model); an odd d_model (a layer check's) gets the first d_model columns."""
    L, d_model = x.shape[1], x.shape[2]
    return formulas.positional_encoding(L, d_model + d_model % 2)[:, :d_model].to(x)  # (L, d_model)


class PositionsEncoderLayer(EncoderLayer):
    def forward(self, x, src_keep):
        return super().forward(x + positions(self.formulas, x), src_keep)  # the bug: positions added in the layer


class PositionsDecoderLayer(DecoderLayer):
    def forward(self, y, memory, tgt_keep, src_keep):
        return super().forward(y + positions(self.formulas, y), memory, tgt_keep, src_keep)  # the bug, likewise


class PositionsInEveryLayer(LayerSwap):
    encoder_cls = PositionsEncoderLayer
    decoder_cls = PositionsDecoderLayer


adapter = PositionsInEveryLayer(name="mutant:positional_encoding_in_every_layer")
