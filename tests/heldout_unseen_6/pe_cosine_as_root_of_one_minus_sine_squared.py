"""§3.5 positional encoding whose cosine columns are computed from the sines by the identity cos = sqrt(1 - sin^2)
(to save a second transcendental call), which loses the cosine's sign: column 2i + 1 holds
|cos(pos / 10000^(2i/d_model))| where the paper's holds cos(pos / 10000^(2i/d_model)). The odd columns are right
wherever the cosine is non-negative (position 0, and every low-frequency column while its angle stays below pi/2)
and negated wherever it is negative; they are never negative. The even (sine) columns, the angles and the
frequencies are right.

Style: NumPy (broadcast outer product, strided column assignment), the angles in float64 and the table returned in
float32; positional_encoding only.
"""

import numpy as np

from conformance import Conventions


class RootCosine:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="numpy")

    def positional_encoding(self, n, d_model):
        pos = np.arange(n, dtype=np.float64)[:, None]
        inv_freq = np.power(10000.0, -np.arange(0, d_model, 2, dtype=np.float64) / d_model)
        s = np.sin(pos * inv_freq)
        pe = np.empty((n, d_model), dtype=np.float64)
        pe[:, 0::2] = s
        pe[:, 1::2] = np.sqrt(1.0 - s * s)  # cos from sin, one transcendental call fewer
        return pe.astype(np.float32)


adapter = RootCosine()
