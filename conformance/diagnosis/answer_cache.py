"""The catalogue's answers kept on disk, from one run to the next: a failing model diagnosed as fast as a passing one.

A student reruns ``certify`` after every edit with the same seed: the failing checks ask the catalogue's
mutants, their combinations and the paper the same questions on the same problems every time. Like
hypothesis's example database or pytest's cache, the answers are kept in a folder:

    $CONFORMANCE_CACHE_DIR, else $XDG_CACHE_HOME/transformer-conformance, else ~/.cache/transformer-conformance
        answers-<digest>/<2 hex>/<key>.npy

``digest`` covers everything an answer depends on besides the question and the problem: the bytes of every
``.py`` file of the ``conformance`` package (its implementations, mutants and checks included), the golden
fixtures, and the versions of python, numpy and torch. ``key`` covers the catalogue member's name, the
question's stable identity (``stable_identity``), the problem (``matching._problem_key``) and torch's thread
count, hashed with sha256 over a canonical encoding. A question or problem without such an identity (a closure,
a lambda, a stand-in object) is not kept here; the process's own memory (``matching._kept``) still keeps it.
The candidate under diagnosis is never kept: only the members the catalogue named (``catalogue.named``).

Entries are written atomically (a temporary file, then ``os.replace``): two xdist workers or two runs never
read a torn file, and a file that cannot be read is a miss, rewritten. The folder stays under MAX_BYTES (the
least recently used entries go), and folders of other digests unused for an hour are removed, at most once per
process. Off with ``CONFORMANCE_CACHE=0`` (``enabled``), for one run with ``certify --no-cache``, and always off
in ``grade``: a submission runs on the grader's machine, and entries it wrote would name a bug it does not have,
or hide one; grading trusts no file another process could have written meanwhile. A run's setting reaches the
diagnosis with each check (``Check(disk_cache=...)``, which ``diagnosis.matching`` passes down to its reads).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import importlib.util
import io
import itertools
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CACHE_DIR_ENV = "CONFORMANCE_CACHE_DIR"
SWITCH_ENV = "CONFORMANCE_CACHE"  # "0": no answer is read or written
FOLDER_PREFIX = "answers-"
FOLDER_PATTERN = re.compile(r"answers-[0-9a-f]{24}")  # only such folders are ever deleted as stale
NO_ANSWER = b"transformer-conformance: the known bug could not answer\n"  # None: an answer too
MAX_BYTES = 200 * 2**20  # above this, the least recently used entries go
TIDY_EVERY = 500  # writes between two checks of the folder's size
STALE_AFTER_S = 3600  # a sibling folder unused this long belongs to an older version of the suite: removed


class Uncacheable(Exception):
    """The value has no identity that another process would compute the same."""


# -- on or off --------------------------------------------------------------------------------------------------

def enabled() -> bool:
    """Whether this process may keep answers on disk at all (``CONFORMANCE_CACHE``); a run may still say no."""
    return os.environ.get(SWITCH_ENV, "1") != "0"


# -- where --------------------------------------------------------------------------------------------------------


def cache_root() -> Path:
    if os.environ.get(CACHE_DIR_ENV):
        return Path(os.environ[CACHE_DIR_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "transformer-conformance"


def folder() -> Path:
    return cache_root() / (FOLDER_PREFIX + source_digest())


@functools.cache
def source_digest() -> str:
    """What every answer depends on besides its question and problem, once per process."""
    return digest_of(_package_roots(), _versions())


def _package_roots() -> dict[str, Path]:
    """The folders of the package's code and fixtures, by package name (an editable install maps
    ``conformance.implementations`` and ``conformance.fixtures`` to the repository's top-level folders)."""
    import conformance
    import conformance.fixtures
    import conformance.implementations

    roots = {name: Path(module.__path__[0]).resolve()
             for name, module in (("conformance", conformance), ("conformance.implementations",
                                                                  conformance.implementations),
                                  ("conformance.fixtures", conformance.fixtures))}
    # A regular install nests the two inside conformance/: hashed once, under conformance.
    return {name: root for name, root in roots.items()
            if name == "conformance" or not root.is_relative_to(roots["conformance"])}


def _versions() -> dict[str, str]:
    return {"python": sys.version, "machine": platform.machine(), "numpy": np.__version__,
            "torch": _torch_version()}


def _torch_version() -> str:
    if "torch" in sys.modules:
        return sys.modules["torch"].__version__
    if importlib.util.find_spec("torch") is None:
        return "absent"
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:
        return "unknown"


def digest_of(roots: dict[str, Path], versions: dict[str, str]) -> str:
    """sha256 over the versions, and over every .py and .json file under the roots (and every fixture file), by
    path."""
    digest = hashlib.sha256()
    for name, value in sorted(versions.items()):
        _put(digest, b"V", f"{name}={value}".encode())
    for name, root in sorted(roots.items()):
        for path in sorted(_digested_files(root, every_file=name.endswith("fixtures"))):
            _put(digest, b"P", f"{name}/{path.relative_to(root).as_posix()}".encode())
            _put(digest, b"C", path.read_bytes())
    return digest.hexdigest()[:24]


def _digested_files(root: Path, *, every_file: bool):
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = [d for d in subdirectories if d != "__pycache__" and not d.startswith(".")]
        for file in files:
            if (every_file and not file.startswith(".")) or file.endswith((".py", ".json")):  # .json: the neighbourhood
                yield Path(directory) / file


# -- keys ---------------------------------------------------------------------------------------------------------


def entry_key(name: str, answer, problem_key) -> str:
    """The entry of catalogue member ``name`` answering ``answer`` on the problem whose key is ``problem_key``;
    Uncacheable when the question or the problem has no stable identity."""
    digest = hashlib.sha256()
    _put(digest, b"M", name.encode())
    _put(digest, b"A", _asked(answer, problem_key).encode())
    _put(digest, b"H", _torch_threads().encode())  # a reduction split over threads rounds differently
    return digest.hexdigest()


@functools.lru_cache(maxsize=256)
def _asked(answer, problem_key) -> str:
    """The question and the problem's part of a key, once for the whole catalogue (each member asks the same)."""
    digest = hashlib.sha256()
    _put(digest, b"Q", stable_identity(answer).encode())
    _feed(digest, problem_key)
    return digest.hexdigest()


def _torch_threads() -> str:
    torch = sys.modules.get("torch")
    return str(torch.get_num_threads()) if torch is not None else "-"


def stable_identity(answer) -> str:
    """``module.qualname`` of a module-level function of the package (its source is in the digest); for a frozen
    dataclass of the package (``AskedAsFitted``) or a ``functools.partial``, that of its parts. Else Uncacheable:
    a closure, a lambda or a bound method carries state no name describes."""
    digest = hashlib.sha256()
    _feed(digest, answer)
    return digest.hexdigest()


def _put(digest, tag: bytes, data: bytes) -> None:
    digest.update(tag + len(data).to_bytes(8, "little") + data)  # length-prefixed: no two encodings collide


def _feed(digest, value) -> None:
    """The canonical encoding of ``value`` into ``digest``: plain data, arrays' parts, the package's frozen
    dataclasses and functions by name. Anything else raises Uncacheable."""
    kind = type(value)
    if value is None or kind in (bool, int, float, str, bytes):
        _put(digest, b"p", f"{kind.__name__}:".encode() + _plain_bytes(value))
    elif kind in (tuple, list):
        _put(digest, b"(", f"{kind.__name__}:{len(value)}".encode())
        for item in value:
            _feed(digest, item)
    elif isinstance(value, np.generic) and value.dtype.kind in "biuf":
        _put(digest, b"n", f"{value.dtype.str}:".encode() + value.tobytes())
    elif isinstance(value, functools.partial):
        _put(digest, b"&", str(len(value.args)).encode())
        _feed(digest, (value.func, value.args, tuple(sorted(value.keywords.items()))))
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        _feed_dataclass(digest, value)
    else:
        _put(digest, b"f", _function_name(value).encode())


def _plain_bytes(value) -> bytes:
    if isinstance(value, bytes):
        return value
    return (value.hex() if isinstance(value, float) else repr(value)).encode()  # float.hex: exact


def _feed_dataclass(digest, value) -> None:
    cls = type(value)
    if not cls.__dataclass_params__.frozen:
        raise Uncacheable(f"{cls.__qualname__} is not frozen")
    _put(digest, b"d", _package_name(cls).encode())
    for field in dataclasses.fields(value):
        _put(digest, b".", field.name.encode())
        _feed(digest, getattr(value, field.name))


def _function_name(value) -> str:
    if not callable(value) or not hasattr(value, "__qualname__") or isinstance(value, type):
        raise Uncacheable(f"no stable identity for {type(value).__qualname__}")
    return _package_name(value)


def _package_name(obj) -> str:
    """``module.qualname`` when ``obj`` is what that name resolves to, in the ``conformance`` package."""
    module, qualname = getattr(obj, "__module__", None) or "", obj.__qualname__
    if not module.startswith("conformance.") or "<" in qualname:
        raise Uncacheable(f"{module}.{qualname} is not a module-level name of the package")
    found = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if found is not obj:
        raise Uncacheable(f"{module}.{qualname} does not resolve to the object")
    return f"{module}.{qualname}"


# -- entries ------------------------------------------------------------------------------------------------------


def path_of(key: str) -> Path:
    return folder() / key[:2] / f"{key}.npy"


def read(key: str) -> tuple[bool, np.ndarray | None]:
    """(found, answer): a missing, torn or unreadable entry is not found (never an error)."""
    path = path_of(key)
    _tidy_once(path.parent.parent)
    try:
        data = path.read_bytes()
        if data == NO_ANSWER:
            answer = None
        else:
            answer = np.load(io.BytesIO(data), allow_pickle=False)
            if not isinstance(answer, np.ndarray) or answer.dtype != np.float64:
                return False, None
            answer.setflags(write=False)
    except Exception:  # noqa: BLE001 - a corrupt entry is a miss, rewritten by the caller
        return False, None
    with contextlib.suppress(OSError):  # a read-only cache still answers
        os.utime(path)  # recently used: the last to be evicted
    return True, answer


_WRITES = itertools.count(1)  # this process's writes, numbered: every TIDY_EVERY-th tidies the folder


def write(key: str, answer: np.ndarray | None) -> None:
    """Store an answer (None: the bug could not answer) atomically; a full or read-only disk loses nothing but
    time."""
    path = path_of(key)
    if next(_WRITES) % TIDY_EVERY == 0:
        tidy(path.parent.parent)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".npy")
        try:
            with os.fdopen(handle, "wb") as file:
                if answer is None:
                    file.write(NO_ANSWER)
                else:
                    np.save(file, np.asarray(answer, np.float64), allow_pickle=False)
            os.replace(temporary, path)  # readers see the old entry or the whole new one
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError:
        return


# -- housekeeping -------------------------------------------------------------------------------------------------


@functools.cache
def _tidy_once(current: Path) -> None:
    """``tidy`` at the first read of a process: a run that only reads marks its folder in use too."""
    tidy(current)


def tidy(current: Path) -> None:
    """Remove the folders of other digests (older versions of the suite) once per process, and the least
    recently used entries of this one above MAX_BYTES."""
    with contextlib.suppress(OSError):
        current.mkdir(parents=True, exist_ok=True)
        os.utime(current)  # in use: another checkout's tidy leaves it alone for STALE_AFTER_S
        _remove_stale_siblings(current)
        _bound_size(current, MAX_BYTES)


@functools.cache
def _remove_stale_siblings(current: Path) -> None:
    now = time.time()
    for sibling in current.parent.iterdir():
        if sibling == current or not FOLDER_PATTERN.fullmatch(sibling.name):
            continue
        with contextlib.suppress(OSError):
            if now - sibling.stat().st_mtime > STALE_AFTER_S:
                shutil.rmtree(sibling, ignore_errors=True)


def _bound_size(current: Path, limit: int) -> None:
    entries = []
    for path in current.glob("*/*.npy"):
        with contextlib.suppress(OSError):
            status = path.stat()
            entries.append((status.st_mtime, status.st_size, path))
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries, key=lambda entry: entry[0]):
        if total <= limit:
            break
        with contextlib.suppress(OSError):
            path.unlink()
            total -= size
