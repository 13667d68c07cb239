"""Attack: replace the file the grader reads the captured output from (output.log in its temporary folder, today)
by a named pipe, then crash the call: a grader that opens it by name waits forever for a writer.

Expected: the grade finishes within a bounded time and writes its report.
"""

import os
from pathlib import Path

from conformance import Conventions


def strike():
    print("about to crash", flush=True)
    temp = Path(os.environ.get("TMPDIR", "/tmp"))
    for folder in (temp, temp / "work"):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names + ["output.log"]:
            path = folder / name
            if path.is_dir() and not path.is_symlink():
                continue
            try:
                path.unlink(missing_ok=True)
                os.mkfifo(path)
            except OSError:
                pass
    os._exit(3)


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        strike()


adapter = Adapter()
