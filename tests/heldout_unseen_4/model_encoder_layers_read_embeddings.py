"""§3.1 encoder stack whose loop never feeds a layer's output to the next layer: ``for l in range(N): out =
layer_l(x, mask)`` with ``x`` the embeddings throughout, so every encoder layer reads the embedded source and the
memory is the output of the last layer (encoder.{N-1}) applied to the embeddings alone; layers 0 .. N-2 are computed
and thrown away, where the paper's encoder is a stack: layer l + 1 reads the output of layer l. With N = 1 it is
right. The decoder stack, the embeddings and the masks are right.

Style: the float64 torch dict-of-tensors model of ``_parts.py`` with ``encoder_stack`` overridden; model only.
"""

from _parts import DictTransformer, model_adapter


class UnchainedEncoder(DictTransformer):
    def encoder_stack(self, x, blocked):
        out = x
        for l in range(self.c.N):
            out = self.encoder_layer(l, x, blocked)
        return out


adapter = model_adapter(UnchainedEncoder)
