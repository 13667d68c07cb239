"""§3.5 positional encoding whose positions come from ``np.linspace(0, n, n)``: linspace includes its endpoint, so
the n positions are 0, n/(n-1), 2n/(n-1), ..., n (a step of n/(n-1) instead of 1; the last row is PE(n) instead of
PE(n - 1)), where the paper's position pos is the integer index 0, 1, ..., n - 1 (``np.arange(n)``, or
``np.linspace(0, n - 1, n)``). Row p holds PE(p · n/(n-1)); the table depends on n (the same position gets another
row in a longer table). Right for n = 1 (position 0 only); row 0 is always right. The frequencies
10000^(-2i/d_model) and the sine/cosine columns are right.

Style: NumPy broadcasting on a column vector, a class with static methods, float64; positional_encoding only.
"""

import numpy as np

from conformance import Conventions


class Sinusoids:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

    @staticmethod
    def _positions(n):
        return np.linspace(0.0, n, num=n)[:, None]

    @staticmethod
    def _inverse_wavelengths(d_model):
        return 1.0 / np.power(10000.0, np.arange(0, d_model, 2) / d_model)

    def positional_encoding(self, n, d_model):
        angles = self._positions(n) * self._inverse_wavelengths(d_model)[None, :]
        table = np.empty((n, d_model))
        table[:, 0::2] = np.sin(angles)
        table[:, 1::2] = np.cos(angles[:, : d_model // 2])
        return table


adapter = Sinusoids()
