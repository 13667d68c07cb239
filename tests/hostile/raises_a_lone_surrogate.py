"""Attack: an exception whose message holds a lone surrogate ("\\ud800"), a character no UTF-8 encoder writes.

Expected: that check an error whose message shows the surrogate escaped (``\\ud800``); the terminal report,
``NAME.txt``, the JSON, HTML, CSV and XML are all written and valid UTF-8; in a class the students after it are
graded and the summary written.
"""

import _honest

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        raise ValueError("bad \ud800 position")

    def layer_norm(self, x, gamma, beta, eps):
        return _honest.layer_norm(x, gamma, beta, eps)


adapter = Adapter()
