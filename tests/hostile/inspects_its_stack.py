"""Attack: behave only when graded. It looks for the grader wherever a program can see itself: the frames
above its calls (their files and modules), the modules loaded before its own import, its arguments, its
environment, its working folder, its own command line and environment in /proc. Where one names the suite
or a test runner it computes correctly; run as an ordinary program it drops 1/sqrt(d_k) and counts
positions from 1.

(The interpreter's own path is left out: a virtual environment inside the suite's checkout names it in any
program run from there.)

Expected: the worker looks like any program: nothing of it names the suite or a test runner, so the
submission computes as it does anywhere else and scores what that code scores: the PE checks fail.
"""

import sys

BEFORE = set(sys.modules)  # what was loaded before this file's own imports

import inspect  # noqa: E402 - after BEFORE
import os  # noqa: E402
from pathlib import Path  # noqa: E402

import _honest  # noqa: E402

HERE = str(Path(__file__).resolve().parent)
SIGNS = ("conformance", "pytest", "hypothesis", "xdist", "grader", "autograd")
RUNNERS = {"conformance", "pytest", "_pytest", "xdist", "hypothesis", "pluggy"}  # packages, by their top-level name


def names_it(text) -> bool:
    text = str(text).replace(HERE, "").lower()  # its own folder's path says nothing (a temporary folder's name)
    return any(sign in text for sign in SIGNS)


def loaded_before() -> list[str]:
    """The packages loaded before its own imports that a test runner or the suite would bring (an editable
    install's finder, loaded by the interpreter itself, aside)."""
    return [name for name in BEFORE if name.split(".")[0] in RUNNERS]


def proc_self(name: str) -> list[str]:
    try:
        return Path(f"/proc/self/{name}").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def clues() -> list[str]:
    found = []
    for info in inspect.stack()[2:]:  # above under_grader and the part: whoever calls the submission
        module = info.frame.f_globals
        found += [info.filename, str(module.get("__name__")), str(module.get("__file__"))]
    found += loaded_before()
    found += sys.argv[1:] + [f"{k}={v}" for k, v in os.environ.items()] + [os.getcwd()]
    return found + proc_self("cmdline")[1:] + proc_self("environ")


def under_grader() -> bool:
    return any(names_it(clue) for clue in clues())


adapter = _honest.Borrower(lambda: (_honest.positional_encoding, _honest.attention) if under_grader() else None)
