"""§3.4 tied output projection that reshapes the embedding table instead of transposing it: the logits are
y @ E.reshape(d_model, V), the (V, d_model) table's numbers re-read row-major as a (d_model, V) matrix, where the
paper shares E between the embedding layers and the pre-softmax linear transformation, logits = y E^T
(``E.T``, one column per token holding that token's embedding). The shapes agree, so nothing fails to run; each
logit reads a scrambled block of the table. The embeddings entering the stacks, the positions and the layers are
right.

Style: the float32 NumPy functional model of ``_parts.py`` (flat parameter dict, additive masks) with its
``output_matrix`` overridden; model only (``build_model``).
"""

from _parts import NumpyTransformer, model_adapter


class ReshapedOutput(NumpyTransformer):
    def output_matrix(self):
        if not self.c.tie_output:
            return self.p["W_out"]
        table = self.table("tgt")
        return table.reshape(self.c.d_model, table.shape[0])


adapter = model_adapter(ReshapedOutput)
