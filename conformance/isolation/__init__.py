"""Running an implementation you do not trust: in a worker process, behind a proxy adapter.

``proxy.py`` (the grader's side: ``ProxyAdapter``, ``Limits``), ``worker.py`` (the worker and its
supervisor), ``wire.py`` (the plain-data messages between them), ``sandbox.py`` (resource limits and
Landlock). docs/grading.md describes what is contained and how.
"""
