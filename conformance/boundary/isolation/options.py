"""The isolation's command-line options and its few hooks into the pytest plugin.

``--isolate`` / ``--no-isolate`` (default: isolated for an implementation named by a path, in-process
for the built-ins and ``module:attribute``), ``--worker-memory MIB``, ``--worker-total-timeout S``,
``--pass-env NAME``, ``--allow-read PATH`` (repeatable): the same names as the CLI's.
"""

from __future__ import annotations

from typing import Any

from conformance.boundary.isolation import existing_folder, variable_set_here
from conformance.boundary.isolation.proxy import Limits, ProxyAdapter


def add_options(group) -> None:
    group.addoption("--isolate", dest="conformance_isolate", action="store_const", const=True, default=None,
                    help="run the implementation in a sandboxed worker process (default for a path to a .py file)")
    group.addoption("--no-isolate", dest="conformance_isolate", action="store_const", const=False,
                    help="run the implementation in this process (default for built-ins and module:attribute)")
    group.addoption("--worker-memory", type=int, default=Limits.memory_mib, metavar="MIB",
                    help=f"address-space limit of an isolated worker (default {Limits.memory_mib})")
    group.addoption("--worker-total-timeout", type=float, default=Limits.total_s, metavar="S",
                    help=f"wall-clock seconds an isolated implementation may use in all (default {Limits.total_s:g})")
    group.addoption("--pass-env", dest="conformance_pass_env", action="append", default=[], metavar="NAME",
                    type=variable_set_here,
                    help="give an isolated worker this variable of this environment, with its value (repeatable;"
                         " the worker's environment is otherwise minimal)")
    group.addoption("--allow-read", dest="conformance_allow_read", action="append", default=[], metavar="PATH",
                    type=existing_folder,
                    help="let an isolated worker read PATH (repeatable; it reads only its own folder, Python and its"
                         " packages otherwise)")


def load_options(config) -> dict[str, Any]:
    """``loading.load`` keyword arguments from the pytest options."""
    total = config.getoption("worker_total_timeout")
    limits = Limits(memory_mib=config.getoption("worker_memory"), total_s=total, cpu_s=int(total),
                    pass_env=tuple(dict.fromkeys(config.getoption("conformance_pass_env"))),
                    allow_read=tuple(dict.fromkeys(config.getoption("conformance_allow_read"))))
    return {"isolate": config.getoption("conformance_isolate"), "limits": limits,
            "threads": config.getoption("conformance_threads")}


def seed_worker(candidate, seed: int) -> None:
    """The check's torch seed, sent with the next call to an isolated candidate."""
    adapter = getattr(candidate, "adapter", None)
    if isinstance(adapter, ProxyAdapter):
        adapter.seed(seed)


def summary(candidate) -> dict:
    adapter = getattr(candidate, "adapter", None)
    if isinstance(adapter, ProxyAdapter):
        return adapter.summary()
    return getattr(adapter, "isolation", None) or {"isolated": False}  # an UnloadableAdapter's record


def close(candidates) -> None:
    """The session's end: each isolated worker is told to stop; ``proxy.stop_all_workers`` waits for them."""
    for candidate in candidates:
        adapter = getattr(candidate, "adapter", None)
        if isinstance(adapter, ProxyAdapter):
            adapter.close(wait=False)
