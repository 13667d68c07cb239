"""The Transformer as a JAX user writes it: Flax NNX modules, attention in ``jnp.einsum``, optax's Adam.

A third implementation, independent of the reference and of the NumPy one: ``model.py`` holds the modules
(float32, JAX's default), ``training.py`` the paper's recipe (§5.3, §5.4), ``adapter.py`` the protocol.
Load it as the built-in ``jax``; it needs the ``jax`` extra (jax, flax and optax).
"""

from __future__ import annotations

import importlib

MISSING = ("the built-in 'jax' needs jax, flax and optax, which are not installed. Fix: pip install"
           " 'transformer-conformance[jax]'")


def require(*packages: str) -> None:
    """Import each package, or raise ModuleNotFoundError whose message names the extra that installs them."""
    for package in packages:
        try:
            importlib.import_module(package)
        except ModuleNotFoundError as exc:
            raise ModuleNotFoundError(MISSING, name=package) from exc


require("jax", "flax", "optax")
