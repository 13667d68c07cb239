"""Attack: the temporary folder has no quota. At import it writes TARGET_MIB (1024) MiB into its temporary
folder, in files of 32 MiB (below the 64 MiB file-size limit), and keeps them; it prints how far it got ("WROTE n
MiB" or "STOPPED after n MiB: why"). Then it answers honestly.

Expected: writing far beyond a quota fails (or is reported); what reaches the disk stays within a sane bound.
"""

import os
from pathlib import Path

import _honest

from conformance import Conventions

TARGET_MIB = 1024
CHUNK = b"\xa5" * (2**20)


def fill() -> str:
    folder = Path(os.environ.get("TMPDIR", "/tmp"))
    written = 0
    try:
        for index in range(TARGET_MIB // 32):
            with open(folder / f"ballast-{index}", "wb") as file:
                for _ in range(32):
                    file.write(CHUNK)
                    written += 1
    except OSError as exc:
        return f"STOPPED after {written} MiB: {exc}"
    return f"WROTE {written} MiB"


print(fill(), flush=True)


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        return _honest.positional_encoding(n, d_model)


adapter = Adapter()
