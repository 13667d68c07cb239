"""The isolation's few hooks into the pytest plugin: an isolated candidate's seed, record and end.

Its options (``--isolate``, ``--worker-memory``, ...) are declared with the others in ``conformance.run.options``;
the limits they set are built by ``conformance.run.runs.limits``.
"""

from __future__ import annotations

from conformance.boundary.isolation.proxy import ProxyAdapter


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
    """The session's end: each isolated worker is told to stop; ``supervisor.stop_all_workers`` waits for them."""
    for candidate in candidates:
        adapter = getattr(candidate, "adapter", None)
        if isinstance(adapter, ProxyAdapter):
            adapter.close(wait=False)
