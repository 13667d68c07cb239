"""The parameter count leaves out each decoder layer's cross-attention and its LayerNorm.

Violates Table 3 (§6.2) as the lesson counts it (Step 7): "An encoder layer has 1 attention and 2 norms; a
decoder layer 2 and 3": the decoder's self-attention and its encoder-decoder attention (§3.1: "the
decoder inserts a third sub-layer, which performs multi-head attention over the output of the encoder
stack"). Counting a decoder layer like an encoder layer misses 4 d^2 + 4 d + 2 d per layer: 6,309,888
of the base model's 63,082,496.
"""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class DecoderWithoutCrossAttention(NumpyAdapter):
    def decoder_layer_parameters(self, config):
        return self.encoder_layer_parameters(config)  # the bug: 1 attention and 2 norms, like an encoder layer


adapter = DecoderWithoutCrossAttention()
