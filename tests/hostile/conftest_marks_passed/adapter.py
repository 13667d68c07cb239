"""Attack, with its conftest.py: a submission folder whose conftest marks every test passed when pytest
collects the folder. LayerNorm itself is wrong.

Expected: the grader never collects the submission's folder (its checks come from the installed
package, the adapter runs in a worker): the conftest is never imported, the LayerNorm checks fail.
"""

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def layer_norm(self, x, gamma, beta, eps):
        return x * gamma + beta


adapter = Adapter()
