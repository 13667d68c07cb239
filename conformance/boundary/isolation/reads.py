"""What an isolated worker may read (``sandbox.Reads``, which Landlock enforces from ABI 1).

- its own folder: a submission's folder under ``grade``, else the folder of the adapter's file (or of the
  package a ``module:attribute`` names); modules beside the adapter import as usual;
- the Python installation and its packages (the interpreter's prefix, the virtual environment's, the
  standard library and site-packages folders), and the system's libraries (``sandbox.SYSTEM_TREES``);
- its temporary folder (writable too), and the folders the grader names with ``--allow-read``;
- of the suite: under ``grade`` only the adapter protocol's modules (``ADAPTER_API``: what ``from conformance
  import Conventions`` and the helpers of ``conformance.adapters`` import), never the checks, the runner, the
  built-in implementations, the oracle or the golden fixtures; under ``certify`` the suite's code and
  implementations (adapters of real code build on them), never the fixtures nor the oracle.

Nothing else: not the folder above its own (a class folder, the instructor's solution), not another
submission, not the user's home. Listing a folder counts as reading it.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import site
import stat
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

from conformance.boundary.isolation.sandbox import Reads

# The suite's modules an adapter may import (the facade's names and the helpers), in the order of the package.
# A module one of them imports must be here too: tests/test_isolation_reads.py checks the closure.
ADAPTER_API = ("conformance", "conformance.adapter", "conformance.compare", "conformance.config",
               "conformance.errors", "conformance.paper", "conformance.paper.formulas", "conformance.provenance",
               "conformance.tolerances", "conformance.weights")
ADAPTER_HELPERS = "conformance.adapters"  # a package: its folder whole
PRIVATE = ("conformance.fixtures", "conformance.implementations", "conformance.reports")  # packages
ORACLE = "conformance.problems.oracle"


def worker_reads(own_folder: Path | None, *, suite: str, allow_read: tuple[str, ...] = ()) -> Reads:
    """The worker's ``Reads``: ``suite`` "api" (a graded submission: the adapter protocol only) or "code" (the
    suite's code and implementations, not its fixtures nor its oracle)."""
    trees = [*python_trees(), *([str(own_folder)] if own_folder else []), *allow_read]
    if suite == "api":
        package = _folder("conformance")
        return Reads(trees=[*trees, _folder(ADAPTER_HELPERS)], listable=api_packages(),
                     files=[file for name in ADAPTER_API for file in module_files(name)],
                     hidden=[package, *map(_folder, PRIVATE)])
    code = [_folder("conformance"), _folder("conformance.implementations")]
    return Reads(trees=[*trees, *code], hidden=[_folder("conformance.fixtures"), *module_files(ORACLE)])


def api_packages() -> list[str]:
    """The folders of the packages in ``ADAPTER_API``: listable, so that the import system finds their modules
    (it lists a folder to find a module in it), none of them readable whole."""
    return [_folder(name) for name in ADAPTER_API if importlib.util.find_spec(name).submodule_search_locations]


def python_trees() -> list[str]:
    """The Python installation: the interpreter's prefixes (a virtual environment's and its base), the standard
    library, site-packages, the folder of libpython. Never "/" nor a folder holding the user's home."""
    paths = sysconfig.get_paths()
    found = [sys.prefix, sys.base_prefix, sys.exec_prefix, *(paths[key] for key in ("stdlib", "platstdlib",
             "purelib", "platlib")), *site.getsitepackages(), sysconfig.get_config_var("LIBDIR") or ""]
    home = Path.home().resolve()
    trees = []
    for text in dict.fromkeys(os.path.realpath(path) for path in found if path):
        if text != "/" and not home.is_relative_to(text) and os.path.isdir(text):
            trees.append(text)
    return trees


def worker_path(reads: Reads) -> list[str]:
    """The grader's import path as far as the worker may read it; and the folder that holds the suite's package
    when only the path finds the suite (not installed): that folder is then listable, never readable."""
    allowed = [Path(tree) for tree in reads.trees]
    suite_root = str(Path(_folder("conformance")).parent) if suite_on_the_path_only() else None
    path = []
    for entry in sys.path:
        real = Path(os.path.realpath(entry or os.curdir))
        if any(real == tree or real.is_relative_to(tree) for tree in allowed) or str(real) == suite_root:
            path.append(str(real))
    if suite_root in path and suite_root not in reads.listable:
        reads.listable.append(suite_root)
    return list(dict.fromkeys(path))


def suite_on_the_path_only() -> bool:
    """Whether ``conformance`` is found only through an entry of the import path outside the Python installation
    (a checkout on PYTHONPATH), not installed (site-packages, or an editable install's finder)."""
    package = Path(_folder("conformance"))
    if any(package.is_relative_to(tree) for tree in python_trees()):
        return False
    finders = [f for f in sys.meta_path if f is not importlib.machinery.PathFinder and hasattr(f, "find_spec")]
    return not any(finder.find_spec("conformance", None) for finder in finders)


def own_folder(location: str) -> Path | None:
    """The folder of an adapter's file (or notebook), or of the package (or module file) ``module:attribute`` names."""
    if location.endswith((".py", ".ipynb")):  # a file's folder: a module's, or a notebook's
        return Path(location).resolve().parent
    spec = importlib.util.find_spec(location.split(".")[0])  # the top-level name: nothing of it is imported
    if spec is None or spec.origin in (None, "built-in", "frozen"):
        return None
    return Path(spec.origin).resolve().parent if spec.submodule_search_locations else Path(spec.origin).resolve()


def module_files(name: str) -> list[str]:
    """A module's source file and every compiled copy of it in ``__pycache__`` (any optimisation level)."""
    spec = importlib.util.find_spec(name)
    source = Path(spec.origin).resolve()
    cache = source.parent / "__pycache__"
    compiled = sorted(cache.glob(f"{source.stem}.*.pyc")) if cache.is_dir() else []
    return [str(source), *map(str, compiled)]


def _folder(package: str) -> str:
    return str(Path(importlib.util.find_spec(package).submodule_search_locations[0]).resolve())


SCANNED = 20_000  # entries of a submission's folder looked at for device nodes: a submission is small


def entries_under(folder: Path, *, depth: int | None = None, limit: int | None = None) -> Iterator[os.DirEntry]:
    """Every entry beneath ``folder``, breadth first, at most ``depth`` levels down and ``limit`` entries; links are
    not followed and nothing recurses: a submission's thousand-level tree is walked as far as that, no error."""
    level, seen, down = [str(folder)], 0, 0
    while level and (depth is None or down <= depth):
        below = []
        for current in level:
            try:
                entries = list(os.scandir(current))
            except OSError:
                continue
            for entry in entries:
                seen += 1
                if limit is not None and seen > limit:
                    return
                yield entry
                if entry.is_dir(follow_symlinks=False):
                    below.append(entry.path)
        level, down = below, down + 1


def device_nodes(folder: Path) -> list[str]:
    """The device nodes under a submission's folder (its first ``SCANNED`` entries): a device node it ships would
    open a device of this machine wherever mounts do not refuse devices; the grader refuses to run it."""
    found = []
    for entry in entries_under(folder, limit=SCANNED):
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError:
            continue
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            found.append(entry.path)
    return found
