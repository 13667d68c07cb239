"""§3.5 positional encoding whose cosine columns are the cosine of the *sine*: the sine is taken in place
(``angle.sin_()``, to save a tensor), which overwrites the angles, and the cosine columns are then computed from the
same tensor, so column 2i + 1 holds cos(sin(pos / 10000^(2i/d_model))) where the paper's holds
cos(pos / 10000^(2i/d_model)). The even (sine) columns are right, and so is position 0 (cos(sin(0)) = 1); every
other odd column lies in [cos 1, 1] = [0.54, 1] instead of [-1, 1].

Style: torch in float64 (torch.outer, strided column assignment, an in-place op), a plain class; positional_encoding
only.
"""

import torch

from conformance import Conventions


class InPlaceSinusoids:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="torch")

    def positional_encoding(self, n, d_model):
        pos = torch.arange(n, dtype=torch.float64)
        inv_freq = 1.0 / 10000.0 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
        angle = torch.outer(pos, inv_freq)
        pe = torch.zeros(n, d_model, dtype=torch.float64)
        pe[:, 0::2] = angle.sin_()
        pe[:, 1::2] = angle[:, : d_model // 2].cos()
        return pe.numpy()


adapter = InPlaceSinusoids()
