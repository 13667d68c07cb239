"""The isolated worker's environment: what it holds, what the grader passes on request, what was removed.

The worker starts with a minimal environment (``BASE``): ``PATH``, ``HOME`` and ``TMPDIR`` (its temporary
directory), the locale, and the thread counts of the numeric libraries. Nothing else of the grader's
environment reaches it, unless named with ``--pass-env NAME``: the variable then goes to the worker with its
value here, and the report lists its name (``isolation.limits.pass_env``), never its value. Passing a secret
to a submission's code hands the secret to its author.

An adapter that finds its checkout through a variable (``os.environ["EXT_ROOT"]``) fails to load isolated;
the load error names the removed variables the import looked up (``AbsentLookups``) and how to pass one, or to run
in-process. A call
that fails on a missing variable says the same of that variable.
"""

from __future__ import annotations

import os
from pathlib import Path

# The worker's own variables, whatever the grader's are.
BASE = ("PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
NAMES_SHOWN = 12  # a CI runner sets a hundred variables: the first ones, then how many more


def worker_environment(home: Path, temp_dir: Path, threads: int, pass_env: tuple[str, ...] = ()) -> dict[str, str]:
    """The minimal environment and the variables named by ``pass_env`` with their values here. Nothing of the
    suite's own: the import path goes in the worker's boot message (``supervisor.boot_message``), not a variable."""
    n = str(threads) if threads > 0 else "1"
    values = ("/usr/local/bin:/usr/bin:/bin", str(home), str(temp_dir), "C.UTF-8", "C.UTF-8", n, n, n)
    base = dict(zip(BASE, values, strict=True))
    passed = {name: os.environ[name] for name in pass_env if name in os.environ}
    return {**base, **passed}


def removed(pass_env: tuple[str, ...]) -> list[str]:
    """The names of the variables set in this environment that the worker does not get (neither its own nor
    passed)."""
    kept = {*BASE, *pass_env}
    return sorted(name for name in os.environ if name not in kept)


def missing_variable(exc: BaseException) -> str | None:
    """The variable whose lookup ``os.environ[NAME]`` (or ``os.environ.pop(NAME)``) raised the ``KeyError``
    behind ``exc`` (the exception itself, or one it was raised from or while handling); None if none did.
    Told by the innermost frame: ``os.environ.__getitem__`` itself. A ``getenv`` that returned None and failed
    later cannot be told apart from any other error, and is not guessed."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, KeyError) and exc.args and isinstance(exc.args[0], str) and _raised_by_environ(exc):
            return exc.args[0]
        exc = exc.__cause__ or exc.__context__
    return None


def _raised_by_environ(exc: KeyError) -> bool:
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    frame = tb.tb_frame
    return frame.f_code.co_name == "__getitem__" and frame.f_locals.get("self") is os.environ


def load_note(pass_env: tuple[str, ...], missing: str | None, looked_up: list[str] = ()) -> str:
    """What a load error adds about the environment (sentences, no leading separator): for a missing variable,
    whether the sandbox removed it and the fix; else the variables the import looked up (``AbsentLookups``) that the
    sandbox removed; "" when the environment cannot be the cause (it looked up none of them): a TypeError of the
    adapter's own is about the adapter only."""
    gone = removed(pass_env)
    if missing is not None:
        return _missing_fix(missing, gone) or "Fix the file's import-time code"
    read = [name for name in gone if name in set(looked_up)]  # the grader's own names: nothing the worker wrote
    if not read:
        return ""
    passed = f" and the variables passed ({', '.join(pass_env)})" if pass_env else ""
    them, one = ("them", "one") if len(read) > 1 else ("it", "it")
    return (f"The import looked up {fmt_names(read)}, set in this environment; the sandbox removed {them} from the"
            f" worker's, which holds only PATH, HOME, TMPDIR, the locale and thread counts{passed}. If the import"
            f" needs {one}: --pass-env NAME (repeatable), or --no-isolate to run in this process")


class AbsentLookups:
    """The names the candidate's code looked up in ``os.environ`` and found absent (``os.environ[NAME]``,
    ``os.environ.get``, ``os.getenv``), in the order first looked up: what a load error may say about the
    environment. ``watch`` makes ``os.environ`` an instance of a subclass that notes them."""

    KEPT = 64

    def __init__(self):
        self.names: list[str] = []

    def watch(self) -> None:
        names, kept = self.names, self.KEPT

        class Watched(type(os.environ)):
            def __getitem__(self, key):
                try:
                    return super().__getitem__(key)
                except KeyError:
                    if isinstance(key, str) and len(names) < kept and key not in names:
                        names.append(key)
                    raise

        os.environ.__class__ = Watched


def call_note(pass_env: tuple[str, ...], missing: str | None) -> str:
    """What a call's error adds when it failed on a variable the sandbox removed: " (NAME is set in ...)";
    "" otherwise (a variable unset in this environment too fails the same in-process)."""
    if missing is None or missing not in removed(pass_env):
        return ""
    return f" ({_missing_fix(missing, [missing])})"


def _missing_fix(name: str, gone: list[str]) -> str:
    if name in gone:
        return (f"{name} is set in this environment, but the sandbox removed it from the worker's. Fix: --pass-env"
                f" {name}, or --no-isolate to run in this process")
    if name not in os.environ:
        return f"{name} is not set in this environment either. Fix: set it, then pass it with --pass-env {name}"
    return ""


def fmt_names(names: list[str], shown: int = NAMES_SHOWN) -> str:
    """"A, B, C"; past ``shown`` names, "A, ..., T and 12 more"."""
    head = ", ".join(names[:shown])
    return head + (f" and {len(names) - shown} more" if len(names) > shown else "")
