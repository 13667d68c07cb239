"""Attack: hold memory where the address-space limit does not look. At import it writes HELD_MIB (2560) MiB into a
memfd (os.memfd_create) or into /dev/shm (files unlinked at once, kept open), never mapped, under a
--worker-memory of 2048 MiB, in pieces of 32 MiB (each below the 64 MiB file-size limit); then answers honestly. If
it cannot hold the memory it says so (a load error naming "could not hold").

Expected: it does not go unnoticed: the worker is stopped by the limit, or the report's memory figure counts it.
"""

import os

import _honest

from conformance import Conventions

WHERE = "memfd"
HELD_MIB = 2560
CHUNK = b"\x5a" * (8 * 2**20)
PIECE_MIB = 32


def piece(index: int) -> int:
    if WHERE == "memfd":
        return os.memfd_create(f"held-{index}")
    path = f"/dev/shm/held-{os.getpid()}-{index}"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    os.unlink(path)
    return fd


def hold() -> list[int]:
    fds = []
    for index in range(HELD_MIB // PIECE_MIB):
        fds.append(piece(index))
        for _ in range(PIECE_MIB // 8):
            os.write(fds[-1], CHUNK)
    return fds


try:
    HELD = hold()
except OSError as exc:
    raise MemoryError(f"could not hold {HELD_MIB} MiB in {WHERE}: {exc}") from None
print(f"HOLDING {HELD_MIB} MiB in {WHERE}", flush=True)


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        return _honest.positional_encoding(n, d_model)


adapter = Adapter()
