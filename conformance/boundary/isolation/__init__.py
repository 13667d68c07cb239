"""Running an implementation you do not trust: in a worker process, behind a proxy adapter.

``proxy.py`` (the grader's side: ``ProxyAdapter``, whose parts forward their calls over the wire, ``Limits``),
``supervisor.py`` (the worker process's life: started, limited, watched and killed), ``worker.py`` (the worker:
imports the implementation, answers calls), ``trampoline.py`` (the worker's first code, which loads the rest
under a neutral name), ``importing.py`` (importing the implementation, in-process and in the worker),
``notebooks.py`` (a notebook's cells run in a kernel, then its adapter taken from their namespace),
``environment.py`` (the worker's environment: what it holds, ``--pass-env``), ``reads.py`` (what it may read: its
folder, Python, ``--allow-read``), ``wire.py`` (the plain-data messages between them, through a pipe),
``sandbox.py`` (namespaces, resource limits and Landlock), ``warm.py`` (the pre-imported process each worker of
a run forks from), ``options.py`` (the pytest options). docs/grading.md
describes what is contained and how.
"""

import argparse
import os

# The defaults of the two limits the command line sets (``Limits.memory_mib``, ``Limits.total_s``), and the
# checks of ``--pass-env`` and ``--allow-read``, here rather than in proxy.py so that the CLI's parser (``--help``)
# reads them without importing the isolation.
WORKER_MEMORY_MIB = 8192
CELL_TIME_S = 120.0  # each code cell of a notebook (``notebooks.py``; --cell-timeout)
WORKER_TOTAL_S = 1800.0


def variable_set_here(name: str) -> str:
    """``--pass-env NAME``'s check (an argparse ``type``): NAME must be set in the grader's environment, whose
    value the worker then gets. A usage error naming it otherwise."""
    if name not in os.environ:
        raise argparse.ArgumentTypeError(
            f"{name!r} is not set in this environment, so there is no value to pass to the worker. Fix: set it"
            f" (export {name}=...), or leave out --pass-env {name}")
    return name


def existing_folder(text: str) -> str:
    """``--allow-read PATH``'s check (an argparse ``type``): PATH must exist; the worker may then read it (and
    what is beneath it). Returned absolute, as the report records it."""
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"{text!r} does not exist (relative to {os.getcwd()}). Fix: give the path"
                                         " of a folder or file the isolated implementation needs to read")
    return os.path.abspath(text)
