"""§3.5 model that adds no positional encoding on the source side: the encoder's input is sqrt(d_model) E[token]
alone (the call that adds the sinusoids is missing from ``encode``), while the decoder's input is
sqrt(d_model) E[token] + PE(pos) as it should be, where the paper adds the positional encodings "to the input
embeddings at the bottoms of the encoder and decoder stacks". The encoder is then blind to word order (its output
is equivariant to a permutation of the source). The target side, the scale and the layers are right.

Style: the float64 torch dict-of-tensors model of ``_parts.py`` with ``encode_tensor`` overridden; model only.
"""

from _parts import DictTransformer, model_adapter


class NoSourcePositions(DictTransformer):
    def encode_tensor(self, src):
        x = self.scaled_lookup(src, "src")
        return self.encoder_stack(x, self.blocked(src))


adapter = model_adapter(NoSourcePositions)
