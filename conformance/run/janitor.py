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

class Janitor:
    """This process's janitor, once started: the write end of its input (forked graders inherit it)."""

    pipe: int | None = None

    def start(self) -> None:
        if self.pipe is not None:
            return
        janitor = subprocess.Popen([sys.executable, "-I", "-S", "-c", PROGRAM], stdin=subprocess.PIPE,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self.pipe = os.dup(janitor.stdin.fileno())
        janitor.stdin.close()
        janitor.returncode = 0  # never waited for: it outlives this process by design; no ResourceWarning for it

    def name(self, path: str | os.PathLike) -> None:
        if self.pipe is not None:
            os.write(self.pipe, os.fsencode(os.fspath(path)) + b"\0")  # one write below PIPE_BUF: never interleaved


JANITOR = Janitor()


def start() -> None:
    """Start this process's janitor (once): the folders named after this will be removed when it ends."""
    JANITOR.start()


def remove_after_exit(path: str | os.PathLike) -> str:
    """Name ``path`` (a temporary folder) to the janitor, if one was started in this process or a parent of it;
    it is removed once they have all ended, however they end. Returns ``path``."""
    JANITOR.name(path)
    return os.fspath(path)
