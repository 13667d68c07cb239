"""§3.5 positional encoding whose index of even columns stops one pair early: ``torch.arange(0, d_model - 2, 2)``
(written to keep the odd index i + 1 inside the table, one pair too cautious) where ``torch.arange(0, d_model, 2)``
was meant, so the last column pair, columns d_model - 2 and d_model - 1 (the lowest frequency), is never written
and stays 0 (sin and cos both 0; the paper's pair holds sin(pos / 10000^((d_model-2)/d_model)) and its cosine, the
cosine column about 1 at small positions). Every other pair, and the formula (angle, exponent, sine even, cosine
odd), is right.

Style: torch in float64 with index tensors (``pe[:, i] = ...``, ``pe[:, i + 1] = ...``); positional_encoding only.
"""

import torch

from conformance import Conventions


class IndexedSinusoids:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="torch")

    def positional_encoding(self, n, d_model):
        i = torch.arange(0, d_model - 2, 2)  # even columns; i + 1 must stay inside the table
        pos = torch.arange(n, dtype=torch.float64)[:, None]
        angle = pos / 10000.0 ** (i.to(torch.float64) / d_model)
        pe = torch.zeros(n, d_model, dtype=torch.float64)
        pe[:, i] = torch.sin(angle)
        pe[:, i + 1] = torch.cos(angle)
        return pe.numpy()


adapter = IndexedSinusoids()
