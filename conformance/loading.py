"""Naming an implementation: a built-in name, ``package.module:attribute``, or a path to a ``.py`` file.

The attribute defaults to ``adapter``; a class is instantiated without arguments. Modules are
imported, never ``exec``-ed. Every failure raises ``LoadError`` with a message that names the fix.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any

from conformance import supports
from conformance.adapter import ADAPTER_PARTS, Conventions
from conformance.candidate import Candidate
from conformance.errors import LoadError
from conformance.naming import BUILTINS, MUTANT_PREFIX, builtin_names, resolve  # noqa: F401 - loading's names too


def import_target(spec: str) -> Any:
    """Import ``module:attr`` or ``path.py[:attr]`` and return the attribute."""
    target = resolve(spec)
    location, _, attr = target.partition(":")
    attr = attr or "adapter"
    module = _import_file(location) if location.endswith(".py") else _import_module(location, spec)
    if not hasattr(module, attr):
        found = [name for name in dir(module) if "adapter" in name.lower()]
        raise LoadError(
            f"{location} has no attribute {attr!r}. Fix: define `{attr} = MyAdapter()` in it, or name the"
            f" attribute: {location}:NAME" + (f" (candidates: {', '.join(found)})" if found else "")
        )
    return getattr(module, attr)


def _import_module(name: str, spec: str) -> Any:
    if not name or not all(part.isidentifier() for part in name.split(".")):
        raise LoadError(
            f"cannot read implementation {spec!r}. Fix: give a built-in name ({', '.join(builtin_names())},"
            " mutant:<name>), a module path like mypkg.adapter:adapter, or a path to a .py file"
        )
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and name.startswith(exc.name):
            raise LoadError(
                f"no module named {exc.name!r} while loading {spec!r}. Fix: install the package, run from"
                f" the folder that contains it, or give a path to its .py file"
            ) from exc
        raise LoadError(f"importing {name} failed: {exc}. Fix: install {exc.name!r}") from exc
    except SystemExit as exc:
        raise LoadError(exited_at_import(exc)) from None
    except Exception as exc:
        raise LoadError(
            f"importing {name} raised {type(exc).__name__}: {exc}. Fix the module's import-time code"
        ) from exc


def _import_file(path_text: str) -> Any:
    path = Path(path_text).resolve()
    if not path.is_file():
        raise LoadError(f"no file {path_text!r}. Fix: check the path (relative to {Path.cwd()})")
    module_name = f"conformance_candidate_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    sys.path.insert(0, str(path.parent))  # the candidate's own sibling modules import as they would
    try:
        spec.loader.exec_module(module)
    except SystemExit as exc:
        del sys.modules[module_name]
        raise LoadError(exited_at_import(exc)) from None
    except Exception as exc:
        del sys.modules[module_name]
        raise LoadError(
            f"importing {path_text} raised {type(exc).__name__}: {exc}. Fix the file's import-time code"
        ) from exc
    finally:
        sys.path.remove(str(path.parent))
    return module


def exited_at_import(exc: SystemExit) -> str:
    return (f"the implementation exited with status {exc.code} while being imported (sys.exit at import time:"
            " put the script's own code under `if __name__ == '__main__':`)")


def validate(adapter: Any, spec: str) -> list[str]:
    """Raise ``LoadError`` for an unusable adapter; return warnings (e.g. a misspelt part)."""
    conventions = getattr(adapter, "conventions", None)
    if not isinstance(conventions, Conventions):
        raise LoadError(
            f"{spec}: the adapter declares no conventions. Fix: add"
            ' `conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework=...)`'
            " (from conformance import Conventions); see docs/adapter-protocol.md"
        )
    problems = supports.validate(conventions.supports)
    if problems:
        raise LoadError(f"{spec}: Conventions(supports=...) is not usable: {'; '.join(problems)}. Fix the"
                        " declaration; docs/adapter-protocol.md lists the features")
    public = [name for name in dir(adapter) if not name.startswith("_") and callable(getattr(adapter, name))]
    warnings = []
    for name in public:
        if name not in ADAPTER_PARTS:
            close = difflib.get_close_matches(name, ADAPTER_PARTS, n=1, cutoff=0.8)
            if close:
                warnings.append(f"{spec}: method {name!r} is not a part; did you mean {close[0]!r}?")
    if not any(name in ADAPTER_PARTS for name in public):
        raise LoadError(
            f"{spec}: the adapter provides none of the parts ({', '.join(ADAPTER_PARTS)}). Fix: define at"
            " least one method; see implementations/template.py"
        )
    return warnings


def is_builtin(spec: str) -> bool:
    """A built-in name or a mutant: the suite's own code, trusted to run in its process."""
    return spec in BUILTINS or spec.startswith(MUTANT_PREFIX)


def names_a_path(spec: str) -> bool:
    return resolve(spec).partition(":")[0].endswith(".py")


def should_isolate(spec: str, isolate: bool | None) -> bool:
    """``isolate`` None: the default, isolated for an implementation named by a path."""
    return names_a_path(spec) if isolate is None else isolate


_PRELOADED: dict[str, Candidate] = {}


def preload(spec: str, candidate: Candidate) -> None:
    """Hand a candidate loaded before pytest starts (the CLI's) to the next ``load(spec)``: an isolated
    implementation's worker is then started once per run, not twice."""
    _PRELOADED[spec] = candidate


def discard_preloaded() -> None:
    _PRELOADED.clear()


def load(spec: str, *, timeout_s: float | None = None, isolate: bool | None = None, limits=None,
         threads: int = 1, wait: bool = True) -> Candidate:
    """Load and validate an implementation; the result is what every check receives. Isolated (see
    ``should_isolate``), the adapter lives in a worker process behind ``isolation.proxy.ProxyAdapter``."""
    if spec in _PRELOADED:
        return _PRELOADED.pop(spec)
    if should_isolate(spec, isolate):
        from conformance.isolation.proxy import load_isolated

        return load_isolated(spec, timeout_s=timeout_s, limits=limits, threads=threads, builtin=is_builtin(spec),
                             wait=wait)
    target = import_target(spec)
    adapter = target() if inspect.isclass(target) else target
    warnings = validate(adapter, spec)
    candidate = Candidate(adapter, name=spec, **({"timeout_s": timeout_s} if timeout_s else {}))
    candidate.load_warnings = warnings
    return candidate
