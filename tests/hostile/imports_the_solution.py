"""Attack: delegate to the instructor's solution. Its own code is wrong (positions counted from 1, attention
without 1/sqrt(d_k)); at import it walks up from its own folder and imports the first ``reference.py`` it
finds (a course folder often keeps the solution next to the class folder), then answers with it.

Expected: under grade the folders above its own cannot be read (Landlock): the import fails, it answers
with its own code and scores what that code scores. The report names the file it tried to read.
"""

import importlib.util
from pathlib import Path

import _honest


def the_solution():
    for folder in Path(__file__).resolve().parents:
        candidate = folder / "reference.py"
        if candidate.is_file():  # a stat: Landlock leaves it, reading is what it refuses
            try:
                spec = importlib.util.spec_from_file_location("solution", candidate)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                return module
            except Exception:
                return None
    return None


SOLUTION = the_solution()


adapter = _honest.Borrower(lambda: SOLUTION and (SOLUTION.positional_encoding, SOLUTION.attention))
