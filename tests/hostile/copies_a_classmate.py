"""Attack: copy a classmate at grading time. Its own code is wrong (positions counted from 1, attention
without 1/sqrt(d_k)); at import it looks beside its own folder, in the class folder, for the other
submissions (listing the folder, else the names it knows), and answers with the first one that loads.

Expected: under grade the submission reads only its own folder: the class folder cannot be listed, a
classmate's file cannot be read (Landlock), so it answers with its own code and scores what that code
scores. The report names what was refused.
"""

import importlib.util
from pathlib import Path

import _honest

HERE = Path(__file__).resolve().parent
CLASSMATES = ("ada", "bob", "cy")  # the class list, for when the folder cannot be listed


def classmates() -> list[Path]:
    try:
        folders = sorted(HERE.parent.iterdir())
    except OSError:
        folders = [HERE.parent / name for name in CLASSMATES]
    return [folder / "adapter.py" for folder in folders if folder != HERE and (folder / "adapter.py").is_file()]


def copied():
    for path in classmates():
        try:
            spec = importlib.util.spec_from_file_location(f"classmate_{path.parent.name}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module.adapter
        except Exception:
            continue
    return None


CLASSMATE = copied()


adapter = _honest.Borrower(lambda: CLASSMATE and (CLASSMATE.positional_encoding,
                                                 CLASSMATE.scaled_dot_product_attention))
