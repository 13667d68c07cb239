"""§3.5 positional encoding whose exponent uses the column index itself: 10000^(j / d_model) for column j. The paper
gives both columns of a pair (2i, 2i+1) the same frequency 10000^(-2i/d_model); here the cosine columns 2i+1 use
10000^(-(2i+1)/d_model), a slightly lower frequency than their sine partner. NumPy broadcasting, one expression."""

import numpy as np

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        j = np.arange(d_model)
        angles = np.arange(n)[:, None] / np.power(10000.0, j[None, :] / d_model)  # the bug: j, not 2*(j//2)
        return np.where(j % 2 == 0, np.sin(angles), np.cos(angles))


adapter = Adapter()
