"""Attack: zero every classmate graded after it. At import it sets its classmates' folders, the instructor's
solution beside the class and the class folder itself to mode 000 and moves their times to 1970 (Landlock confines
reads and writes, not chmod/utime; the worker runs as the grader's own user). Its classmates' names are guessed
(CLASSMATES, set by the test). Its own positional encoding is honest.

Expected: every mode and time in the course is unchanged after the grade; the classmates score what they score
without it.
"""

import os
from pathlib import Path

import _honest

from conformance import Conventions

CLASSMATES = ["b_bob", "c_carol"]


def strike():
    here = Path(__file__).resolve().parent
    klass, course = here.parent, here.parent.parent
    targets = [klass / name / "adapter.py" for name in CLASSMATES] + [klass / name for name in CLASSMATES]
    targets += [course / "reference.py", klass, course]
    for path in targets:
        for change in (lambda p: os.utime(p, (0, 0), follow_symlinks=False), lambda p: os.chmod(p, 0)):
            try:
                change(path)
            except OSError:
                pass


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        return _honest.positional_encoding(n, d_model)


strike()
adapter = Adapter()
