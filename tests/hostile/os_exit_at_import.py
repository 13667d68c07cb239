"""Attack: ``os._exit(0)`` at import: no exception, no cleanup, the process is simply gone.

Expected: a load error "exited with status 0 while being imported" and a non-zero exit code.
"""

import os

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")


os._exit(0)
adapter = Adapter()
