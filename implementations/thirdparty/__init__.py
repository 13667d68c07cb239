"""Adapters of public third-party Transformer implementations installed from PyPI (docs/third-party.md).

Each module imports its package at import time and, when it is absent, raises ``ModuleNotFoundError`` naming the
extra that installs it (``pip install 'transformer-conformance[hf]'``, ``[onmt]``); the loader reports that message.
``_hf`` holds what the adapters share (the import guard, frozen tables as buffers, HF's additive mask).
"""
