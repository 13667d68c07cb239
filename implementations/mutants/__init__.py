"""Mutants: single-bug variants of the reference, one module each (docs/mutants.md).

Every mutant's docstring names its bug on the first line (the kill matrix and the diagnosis show it),
then the paper section it violates, quoted. Each module has ``adapter`` and declares ``CAUGHT_BY`` and
``ERRORED``, the exact checks that fail and error when it is certified (``_build.py`` says how), and
optionally ``MESSAGES`` and ``TRAINING``. Load one as ``mutant:<module name>``. tests/test_mutant_catalogue.py
certifies every mutant and requires exactly those outcomes: a mutant that survives is a hole in the suite.
"""

import pkgutil


def names() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
