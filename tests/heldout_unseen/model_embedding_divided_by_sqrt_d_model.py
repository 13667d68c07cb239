"""§3.4 embeddings divided by sqrt(d_model) instead of multiplied: the model's input is
E[token] / sqrt(d_model) + PE(pos) (``emb * d_model ** -0.5``, the sign of the exponent slipped), where the paper
multiplies the embedding weights by sqrt(d_model): sqrt(d_model) * E[token] + PE(pos). Both stacks, the source and
the target embedding alike; the output projection (y E^T) is untouched.

Style: the torch.nn.Module model of ``_parts.py`` with one overridden method; model only (build_model).
"""

from _parts import Transformer, model_only, sinusoid_table


class Net(Transformer):
    def embed(self, ids, side):
        d = self.c["d_model"]
        return self.table(side)[ids] * d**-0.5 + sinusoid_table(ids.shape[1], d)  # the bug: d^-0.5, not d^0.5


adapter = model_only(Net)
