"""Running an implementation you do not trust: in a worker process, behind a proxy adapter.

``proxy.py`` (the grader's side: ``ProxyAdapter``, ``Limits``), ``worker.py`` (the worker and its
supervisor), ``environment.py`` (the worker's environment: what it holds, ``--pass-env``), ``wire.py`` (the
plain-data messages between them), ``peer.py`` (large messages straight between the two processes' memory,
one CPU shared during a call), ``sandbox.py`` (resource limits and Landlock). docs/grading.md describes what is
contained and how.
"""

import argparse
import os

# The defaults of the two limits the command line sets (``Limits.memory_mib``, ``Limits.total_s``), and the
# check of ``--pass-env``, here rather than in proxy.py so that the CLI's parser (``--help``) reads them without
# importing the isolation.
WORKER_MEMORY_MIB = 8192
WORKER_TOTAL_S = 1800.0


def variable_set_here(name: str) -> str:
    """``--pass-env NAME``'s check (an argparse ``type``): NAME must be set in the grader's environment, whose
    value the worker then gets. A usage error naming it otherwise."""
    if name not in os.environ:
        raise argparse.ArgumentTypeError(
            f"{name!r} is not set in this environment, so there is no value to pass to the worker. Fix: set it"
            f" (export {name}=...), or leave out --pass-env {name}")
    return name
