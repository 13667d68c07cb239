"""The reference with a positional table of 512 rows: encode() of a longer source raises IndexError, as code with a
learned or precomputed table does. Everything else is the reference's."""

from conformance.implementations.reference.adapter import ReferenceAdapter

ROWS = 512


class TableOf512:
    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def encode(self, src):
        if src.shape[1] > ROWS:
            raise IndexError(f"index {ROWS} is out of bounds for dimension 0 with size {ROWS}")
        return self._inner.encode(src)


class PositionsTable512(ReferenceAdapter):
    def build_model(self, config, seed):
        return TableOf512(super().build_model(config, seed))


adapter = PositionsTable512()
