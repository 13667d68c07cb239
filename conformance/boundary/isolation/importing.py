"""Importing an implementation: ``path/to/file.py[:attr]`` or ``package.module[:attr]`` (a built-in's name is
resolved before: ``naming.resolve``). The attribute defaults to ``adapter``. Modules are imported, never
``exec``-ed; every failure is an ``ImportFailed`` whose message names the fix.

In-process loading (``loading.import_target``) and the isolated worker share it. In the worker nothing of
the suite may be on the stack while the implementation's code runs, so this module imports only the standard
library and names nothing of the suite: ``loading`` turns its failures into ``LoadError``.
"""

from __future__ import annotations

import errno
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from . import notebooks  # imported now: in the worker the package is gone once the candidate runs

FIX_IMPORT = "Fix the file's import-time code"


def import_fix(exc: BaseException) -> str:
    """The fix a failed import's message ends with: a write the sandbox refused (a read-only file system, a folder it
    cannot enter) says so and names the way to run the code unsandboxed."""
    if isinstance(exc, OSError) and exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        where = f" ({exc.filename})" if exc.filename else ""
        return (f"The import writes or opens a path{where} the sandbox does not let it (the worker writes only its"
                " temporary folder, TMPDIR). Fix the file's import-time code, or, for code you trust, run it in this"
                " process: --no-isolate")
    return FIX_IMPORT


class ImportFailed(Exception):
    """The implementation could not be imported. Chained to what its code raised, when it raised."""


def split_target(target: str) -> tuple[str, str]:
    """(location, attribute) of ``path.py[:attr]`` or ``module[:attr]``: split at the last colon when an identifier
    follows it; a path to a .py file is whole, colons in its folders' names included (``bob:1/adapter.py``)."""
    notebook = notebooks.parse(target)
    if notebook is not None:  # NOTEBOOK.ipynb[+ADAPTER.py][:ATTR]: located at the notebook
        return notebook.notebook, notebook.attr
    if target.endswith(".py"):
        return target, ""
    location, colon, attr = target.rpartition(":")
    return (location, attr) if colon and attr.isidentifier() else (target, "")


def import_target(target: str, *, module_name=None, spec: str | None = None) -> Any:
    """The attribute ``target`` names. ``module_name(path)``: the name a file is imported under (default: its
    stem); ``spec``: how the user named it, for messages."""
    notebook = notebooks.parse(target)
    if notebook is not None:
        raise ImportFailed("a notebook is loaded with its cells' time limit (loading.load, the worker)")
    location, attr = split_target(target)
    attr = attr or "adapter"
    if location.endswith(".py"):
        module = import_file(location, (module_name or default_name)(Path(location)))
    else:
        module = import_module(location, spec or target)
    if not hasattr(module, attr):
        found = [name for name in dir(module) if "adapter" in name.lower()]
        raise ImportFailed(
            f"{location} has no attribute {attr!r}. Fix: define `{attr} = MyAdapter()` in it, or name the"
            f" attribute: {location}:NAME" + (f" (candidates: {', '.join(found)})" if found else ""))
    return getattr(module, attr)


def load_notebook(target, *, seconds: float, adapter_source: str | None = None,
                  hard_stop: bool = False) -> tuple[Any, list[str]]:
    """(adapter, notes) of a notebook target (``notebooks.load``), its failures as ``ImportFailed``."""
    try:
        return notebooks.load(target, adapter_source=adapter_source, seconds=seconds, hard_stop=hard_stop)
    except notebooks.NotebookFailed as exc:
        failure = str(exc)
    raise ImportFailed(failure)  # outside the handler: the suite's own words, no exception of the code behind them


def default_name(path: Path) -> str:
    """A file's module name as a program that imports it would have: its stem, unless that names a module
    already imported (then ``submission``)."""
    stem = path.stem
    return stem if stem.isidentifier() and stem not in sys.modules else "submission"


def import_module(name: str, spec: str) -> Any:
    if not name or not all(part.isidentifier() for part in name.split(".")):
        raise ImportFailed(f"cannot read implementation {spec!r}. Fix: give a built-in name, a module path like"
                           " mypkg.adapter:adapter, or a path to a .py file")
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and name.startswith(exc.name):
            raise ImportFailed(
                f"no module named {exc.name!r} while loading {spec!r}. Fix: install the package, run from"
                f" the folder that contains it, or give a path to its .py file") from exc
        raise ImportFailed(f"importing {name} failed: {exc}. Fix: install {exc.name!r}") from exc
    except SystemExit as exc:
        raise ImportFailed(exited_at_import(exc)) from None
    except Exception as exc:
        raise ImportFailed(
            f"importing {name} raised {type(exc).__name__}: {exc}. Fix the module's import-time code") from exc


def import_file(path_text: str, module_name: str) -> Any:
    path = Path(path_text).resolve()
    if not path.is_file():
        raise ImportFailed(f"no file {path_text!r}. Fix: check the path (relative to {Path.cwd()})")
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    sys.path.insert(0, str(path.parent))  # the candidate's own sibling modules import as they would
    try:
        spec.loader.exec_module(module)
    except SystemExit as exc:
        del sys.modules[module_name]
        raise ImportFailed(exited_at_import(exc)) from None
    except Exception as exc:
        del sys.modules[module_name]
        raise ImportFailed(
            f"importing {path_text} raised {type(exc).__name__}: {exc}. {import_fix(exc)}") from exc
    finally:
        sys.path.remove(str(path.parent))
    return module


def exited_at_import(exc: SystemExit) -> str:
    return (f"the implementation exited with status {exc.code} while being imported (sys.exit at import time:"
            " put the script's own code under `if __name__ == '__main__':`)")
