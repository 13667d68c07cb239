"""Attack: a student script that runs its own ``main()`` at import, which ends with ``sys.exit(0)``.

Unguarded, in-process, certify would exit 0 with no report. Expected: a load error "exited with status 0 while
being imported", a non-zero exit code, and a report that says so.
"""

import sys

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        raise NotImplementedError


def main():
    print("training my transformer ... done")
    sys.exit(0)


main()
adapter = Adapter()
