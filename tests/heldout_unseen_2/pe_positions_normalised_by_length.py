"""§3.5 sinusoidal positional encoding computed on normalised positions: the position index is divided by the
number of positions n before the angle is taken, PE(pos, 2i) = sin((pos / n) / 10000^(2i/d_model)) (and the cosine
alike), where the paper uses the absolute position pos itself: sin(pos / 10000^(2i/d_model)). The encoding of a
position then depends on the length of the sequence, and every angle is n times too small.

Style: torch functional code (an outer product written with torch.einsum, torch.stack + flatten to interleave the
sine and cosine columns), float32; positional_encoding only.
"""

import torch

from conformance import Conventions


def _interleave(sin, cos):
    return torch.stack([sin, cos], dim=-1).flatten(-2)


class NormalisedPositions:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch")

    def positional_encoding(self, n, d_model):
        pos = torch.arange(n, dtype=torch.float64) / n  # relative position in [0, 1)
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model))
        angles = torch.einsum("p,f->pf", pos, inv_freq)
        return _interleave(torch.sin(angles), torch.cos(angles)).to(torch.float32).numpy()


adapter = NormalisedPositions()
