"""Attack: LayerNorm allocates memory until something gives (a cache that never evicts).

Expected: the worker's address-space limit stops it (MemoryError in the worker); each LayerNorm check
is an error naming the memory limit; the machine is unharmed.
"""

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def layer_norm(self, x, gamma, beta, eps):
        hoard = []
        while True:
            hoard.append(bytearray(64 * 2**20))


adapter = Adapter()
