"""Running an implementation you do not trust: in a worker process, behind a proxy adapter.

``proxy.py`` (the grader's side: ``ProxyAdapter``, ``Limits``), ``worker.py`` (the worker and its
supervisor), ``wire.py`` (the plain-data messages between them), ``peer.py`` (large messages straight
between the two processes' memory, one CPU shared during a call), ``sandbox.py`` (resource limits and
Landlock). docs/grading.md describes what is contained and how.
"""

# The defaults of the two limits the command line sets (``Limits.memory_mib``, ``Limits.total_s``), here
# rather than in proxy.py so that the CLI's parser (``--help``) reads them without importing the isolation.
WORKER_MEMORY_MIB = 8192
WORKER_TOTAL_S = 1800.0
