"""Mutants: single-bug variants of the reference, each a module with ``adapter`` and ``CAUGHT_BY``.

Every mutant's docstring names its bug and the paper section it violates; ``CAUGHT_BY`` lists the
checks that must fail on it. Load one as ``mutant:<module name>``. The suite's own tests certify
every mutant and require exactly those checks to fail: a mutant that survives is a hole in the suite.
"""

import pkgutil


def names() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
