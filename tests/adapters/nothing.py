"""An adapter that declares one part and implements none: nothing runs (exit code 5)."""

from conformance import Conventions


class Nothing:
    conventions = Conventions()

    def positional_encoding(self, n, d_model):
        raise NotImplementedError


adapter = Nothing()
