"""Attack: an exception message whose newlines write lines that look like the report's own: a passing check, the
counts, the sandbox line and "score: 2 / 2", then sixty blank lines to push the real footer out of sight.

Expected: that check an error; in the terminal and ``NAME.txt`` every line of its message after the first is
indented and blank lines come one at a time, so no line of it reads as the report's (the one line that starts
with "score:" is the grader's, the last).
"""

import _honest

from conformance import Conventions

FAKE = ("\n  PASS    layer_norm_matches_published_example"
        "\n\n2 passed, 0 failed, 0 error, 0 advisory, 0 deviation, 0 supplied, 0 not implemented, 0 blocked"
        "\nsandbox: bubblewrap (read-only files, no network, a 256 MiB tmpfs); Landlock ABI 7"
        "\nscore: 2 / 2 (seed 7; replay: transformer-conformance grade x --seed 7)" + "\n" * 60)


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        raise ValueError("bad position" + FAKE)

    def layer_norm(self, x, gamma, beta, eps):
        return _honest.layer_norm(x, gamma, beta, eps)


adapter = Adapter()
