"""Temporary folders removed after any exit of the grading processes, SIGKILL included.

A ``finally`` removes what a process made when it ends normally or by a signal it handles, never when it is killed
(SIGKILL, the out-of-memory killer). So each temporary folder is also named to a **janitor**: a small process of its
own session (a Ctrl-C at the terminal does not reach it) that reads the paths on its standard input and, at the end
of that input, removes them. Its input ends when every process holding the pipe's other end has ended: the grading
process, and the graders it forked (which inherit it and name their own folders on it; they die with their parent).
"""

from __future__ import annotations

import os
import subprocess
import sys

# Run with -I -S: no site, no environment, nothing of the suite: it must start fast and depend on nothing.
PROGRAM = """
import os, shutil, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
named = b""
while chunk := os.read(0, 65536):
    named += chunk
for path in filter(None, named.split(b"\\0")):
    shutil.rmtree(os.fsdecode(path), ignore_errors=True)
"""

_pipe: int | None = None  # this process's end of its janitor's input; forked graders inherit it
_owner: int | None = None  # the process that started the janitor


def start() -> None:
    """Start this process's janitor (once): the folders named after this will be removed when it ends."""
    global _pipe, _owner
    if _pipe is not None:
        return
    janitor = subprocess.Popen([sys.executable, "-I", "-S", "-c", PROGRAM], stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    _pipe, _owner = os.dup(janitor.stdin.fileno()), os.getpid()
    janitor.stdin.close()
    janitor.returncode = 0  # never waited for: it outlives this process by design; no ResourceWarning for it


def remove_after_exit(path: str | os.PathLike) -> str:
    """Name ``path`` (a temporary folder) to the janitor, if one was started in this process or a parent of it;
    it is removed once they have all ended, however they end. Returns ``path``."""
    if _pipe is not None:
        os.write(_pipe, os.fsencode(os.fspath(path)) + b"\0")  # one write below PIPE_BUF: never interleaved
    return os.fspath(path)
