"""Naming an implementation: a built-in name, ``package.module:attribute``, a path to a ``.py`` file, or a notebook
(``NOTEBOOK.ipynb[+ADAPTER.py][:ATTR]``: its cells run in a kernel, ``isolation/notebooks.py``).

The attribute defaults to ``adapter``; a class is instantiated without arguments. Modules are
imported, never ``exec``-ed. Every failure raises ``LoadError`` with a message that names the fix.
"""

from __future__ import annotations

import inspect
from typing import Any

from conformance.adapter import Conventions
from conformance.boundary.candidate import Candidate
from conformance.boundary.declarations import check_declarations
from conformance.boundary.isolation import CELL_TIME_S, frameworks, importing, notebooks
from conformance.boundary.naming import BUILTINS, MUTANT_PREFIX, builtin_names, resolve  # noqa: F401 - loading's names too
from conformance.errors import LoadError


def import_target(spec: str) -> Any:
    """Import ``module:attr`` or ``path.py[:attr]`` and return the attribute."""
    target = resolve(spec)
    location = importing.split_target(target)[0]
    if not location.endswith(".py") and not (location and all(p.isidentifier() for p in location.split("."))):
        raise LoadError(
            f"cannot read implementation {spec!r}. Fix: give a built-in name ({', '.join(builtin_names())},"
            " mutant:<name>), a module path like mypkg.adapter:adapter, or a path to a .py file"
        )
    try:
        return importing.import_target(target, spec=spec, module_name=lambda path: f"conformance_candidate_{path.stem}")
    except importing.ImportFailed as exc:
        raise LoadError(str(exc)) from exc.__cause__


exited_at_import = importing.exited_at_import


def validate(adapter: Any, spec: str) -> list[str]:
    """Raise ``LoadError`` for an unusable adapter; return warnings (e.g. a misspelt part)."""
    conventions = getattr(adapter, "conventions", None)
    public = [name for name in dir(adapter) if not name.startswith("_") and callable(getattr(adapter, name))]
    return check_declarations(conventions if isinstance(conventions, Conventions) else None, public, spec)


def is_builtin(spec: str) -> bool:
    """A built-in name or a mutant: the suite's own code, trusted to run in its process."""
    return spec in BUILTINS or spec.startswith(MUTANT_PREFIX)


def names_a_path(spec: str) -> bool:
    return importing.split_target(resolve(spec))[0].endswith((".py", notebooks.SUFFIX))


def should_isolate(spec: str, isolate: bool | None) -> bool:
    """``isolate`` None: the default, isolated for an implementation named by a path."""
    return names_a_path(spec) if isolate is None else isolate


def load(spec: str, *, timeout_s: float | None = None, isolate: bool | None = None, limits=None,
         threads: int = 1, wait: bool = True, warm=None, dtype: str | None = None) -> Candidate:
    """Load and validate an implementation; the result is what every check receives. Isolated (see
    ``should_isolate``), the adapter lives in a worker process behind ``isolation.proxy.ProxyAdapter``."""
    if should_isolate(spec, isolate):
        from conformance.boundary.isolation.proxy import load_isolated

        return load_isolated(spec, timeout_s=timeout_s, limits=limits, threads=threads, builtin=is_builtin(spec),
                             wait=wait, warm=warm, dtype=dtype)
    notebook = notebooks.parse(resolve(spec))
    if notebook is not None:  # its cells' notes go with the candidate
        try:
            adapter, notes = importing.load_notebook(notebook, seconds=limits.cell_s if limits else CELL_TIME_S)
        except importing.ImportFailed as exc:
            raise LoadError(str(exc)) from None
        candidate = in_process(adapter, spec, timeout_s=timeout_s, dtype=dtype)
        candidate.load_warnings = [*notes, *candidate.load_warnings]
        return candidate
    target = import_target(spec)
    return in_process(target() if inspect.isclass(target) else target, spec, timeout_s=timeout_s, dtype=dtype)


def in_process(adapter: Any, spec: str, *, timeout_s: float | None = None, dtype: str | None = None) -> Candidate:
    """The candidate of an adapter object that runs in this process (a built-in, ``module:attribute``, or an object
    handed to the Python API), validated and switched to ``dtype``."""
    warnings = validate(adapter, spec)
    try:
        switched = frameworks.switch_dtype(adapter, dtype)
    except Exception as exc:
        raise LoadError(f"{spec}: with_dtype({dtype!r}) raised {type(exc).__name__}: {exc}") from exc
    if switched is not adapter:  # what with_dtype returned is what the run calls: validated too, as in a worker
        warnings = validate(switched, spec)
    candidate = Candidate(switched, name=spec, dtype=dtype, **({"timeout_s": timeout_s} if timeout_s else {}))
    candidate.load_warnings = warnings
    return candidate
