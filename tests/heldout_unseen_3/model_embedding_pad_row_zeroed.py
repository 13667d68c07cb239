"""§3.4 model that zeroes the padding row of its embedding table after loading the weights (the
``nn.Embedding(padding_idx=pad_id)`` convention re-applied by a loader: ``E[pad_id] = 0``), so a padding token is
embedded as the zero vector (its input is the positional encoding alone) and, the output projection being tied to
the same table, the logit of the padding token is always 0, where the paper's model uses the learned table E as it
is, for every token: sqrt(d_model) E[pad_id] + PE(pos) at a padded position and the logit y . E[pad_id]. Every
other row, the scale, the positions, the masks and the layers are right.

Style: the float32 NumPy functional model of ``_parts.py`` with a post-load hook (``after_load``); model only.
"""

from _parts import NumpyTransformer, model_adapter


class PaddingRowZeroed(NumpyTransformer):
    def after_load(self):
        pad = self.c.pad_id
        for name in ("E", "E_src", "E_tgt"):
            if name in self.p:
                self.p[name][pad] = 0.0


adapter = model_adapter(PaddingRowZeroed)
