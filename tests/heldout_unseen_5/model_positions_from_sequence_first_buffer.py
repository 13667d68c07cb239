"""§3.5 model that adds the positional encoding with the PyTorch tutorial's sequence-first buffer on batch-first
activations: the table is kept as ``pe`` of shape (max_len, 1, d_model) and added as ``x + pe[:x.shape[0]]``, which
for a sequence-first x (L, B, d) adds PE(pos) to position pos, but here x is batch-first (B, L, d): the slice takes
the first B rows (the batch size, not the length) and broadcasts row b over the positions, so every position of
sentence b gets PE(b), the same vector for the whole sentence, where the paper adds PE(pos) to the embedding at
position pos. Source and target alike (one helper). Sentence 0 gets PE(0) everywhere; word order is lost. The
table itself (sin/cos, 10000^(2i/d_model)), the embeddings and the layers are right.

Style: the float64 NumPy module-class model of ``_parts.py`` with ``add_positions`` overridden (a table of 5,000
rows built once, shaped (max_len, 1, d_model)); model only.
"""

from _parts import NumpyModules, model_adapter, sinusoid_table


class TutorialPositions(NumpyModules):
    max_len = 5000

    def __init__(self, config, seed):
        super().__init__(config, seed)
        self.pe = sinusoid_table(self.max_len, self.d)[:, None, :]  # (max_len, 1, d_model)

    def add_positions(self, x):
        return x + self.pe[: x.shape[0]]


adapter = model_adapter(TutorialPositions)
