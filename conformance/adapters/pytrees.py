"""Canonical weights in and out of a flattened parameter tree (a path -> array dict), for any framework whose
parameters are not ``nn.Module``s: JAX's pytrees (``conformance.adapters.jax``), Keras' variables
(``conformance.adapters.keras``). NumPy only.

A name map (``conformance.adapters.names``: ``{l}``, ``*``, fused ``W_QKV``, copies of a shared table) places the
canonical weights among the tree's dotted paths; how each is stored is read off its shape against the canonical one
(``conformance.weights.model_shapes``):

* the orientation: Flax's and Keras' ``Dense`` kernels are (in, out), already the canonical x @ W; a path ending in
  ``.T`` is stored (out, in) (a port of PyTorch weights);
* per-head kernels: Flax's and Keras' ``MultiHeadAttention`` keep the query, key and value kernels as (d_model, h,
  d_k), their biases as (h, d_k), and the output kernel as (h, d_k, d_model): the canonical (d_model, d_model) matrix
  is that array with its head axes merged, heads in order (head i is columns i d_k .. (i+1) d_k - 1, the paper's
  concatenation);
* fused projections: a block of the output axis of the merged matrix, as for PyTorch ((d_model, 3, h, d_k) is
  [Q | K | V]).

A parameter the map leaves out is set to its identity value by ``write`` when it is a bias, a LayerNorm scale or
offset (the protocol's rule for an output bias or a final LayerNorm); any other is an error naming it.
``DeclaredAdapter`` is what the JAX and Keras adapters declared around a model share.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from conformance.adapters.names import NameMap, NameMapError, Slot

IDENTITY = {"bias": 0.0, "beta": 0.0, "scale": 1.0, "gamma": 1.0}  # leaves load sets when no canonical name has them
OUTPUT_LEAVES = ("W_O",)  # a per-head kernel whose head axes come first: (h, d_k, d_model)


# --------------------------------------------------------------------------------------------------
# One stored parameter as the canonical matrix
# --------------------------------------------------------------------------------------------------


def as_canonical(stored: np.ndarray, name: str, transposed: bool | None) -> np.ndarray:
    """The stored array in the canonical layout: per-head axes merged, (out, in) transposed; whole (before a fused
    projection's block is taken)."""
    leaf = name.rsplit(".", 1)[-1]
    if leaf.startswith("b"):  # a bias: (h, d_k), (3, h, d_k) -> one vector
        return stored.reshape(-1)
    if stored.ndim > 2:
        return stored.reshape(-1, stored.shape[-1]) if leaf in OUTPUT_LEAVES else stored.reshape(stored.shape[0], -1)
    return stored.T if transposed and stored.ndim == 2 else stored


def from_canonical(matrix: np.ndarray, stored_shape: tuple[int, ...], transposed: bool | None) -> np.ndarray:
    """``as_canonical`` undone: the canonical array in the stored layout."""
    if transposed and len(stored_shape) == 2:
        return matrix.T
    return matrix.reshape(stored_shape)


def block(matrix: np.ndarray, slot: Slot) -> slice:
    size = matrix.shape[-1] // slot.blocks
    return slice(slot.block * size, (slot.block + 1) * size)


# --------------------------------------------------------------------------------------------------
# A name map over a pytree
# --------------------------------------------------------------------------------------------------


class PytreeNames:
    """A name map (``conformance.adapters.names``) over the paths of a flattened parameter pytree: ``read`` the
    canonical weights, ``write`` them (new arrays by path), ``unmapped`` the paths no canonical name covers. ``shapes``:
    the canonical names wanted and their shapes (``conformance.weights.model_shapes(config)`` for a whole model)."""

    def __init__(self, names: dict):
        self.map = NameMap(names)

    def slots(self, flat: dict, shapes: dict) -> dict[str, tuple[Slot, ...]]:
        return self.map.resolve(shapes, list(flat))

    def read(self, flat: dict, shapes: dict) -> dict[str, np.ndarray]:
        """Every canonical weight (orientation x @ W) from the first place the map gives it."""
        found = {}
        for name, (slot, *_) in self.slots(flat, shapes).items():
            matrix = as_canonical(np.asarray(flat[slot.path]), name, slot.transposed)
            value = matrix[..., block(matrix, slot)] if slot.blocks > 1 else matrix
            if value.shape != shapes[name]:
                raise ValueError(f"{name}: {slot.path} {np.shape(flat[slot.path])} reads as {value.shape}, expected"
                                 f" {shapes[name]} (orientation x @ W; add or remove '.T')")
            found[name] = value.copy()
        return found

    def write(self, flat: dict, weights: dict[str, np.ndarray], shapes: dict) -> dict[str, np.ndarray]:
        """The new array of every parameter: each canonical weight in every place the map gives it, each unmapped
        bias or LayerNorm vector at its identity value; ``NameMapError`` for an unmapped matrix."""
        slots, new = self.slots(flat, shapes), {}
        for name, places in slots.items():
            for slot in places:
                stored = np.asarray(flat[slot.path])
                base = new.get(slot.path, stored)
                matrix = as_canonical(np.array(base), name, slot.transposed)
                value = np.asarray(weights[name], dtype=stored.dtype)
                target = matrix[..., block(matrix, slot)] if slot.blocks > 1 else matrix
                if value.shape != target.shape:
                    raise ValueError(f"{name}: shape {value.shape} does not fit {slot.path} {stored.shape} read as"
                                     f" {target.shape} (orientation x @ W; add or remove '.T')")
                target[...] = value
                new[slot.path] = from_canonical(matrix, stored.shape, slot.transposed)
        for path in self.unmapped(flat, shapes, slots):
            leaf = path.rpartition(".")[2]
            stored = np.asarray(flat[path])
            if leaf not in IDENTITY or stored.ndim != 1:
                raise NameMapError([f"{path} {stored.shape} has no canonical name and no identity value (a bias, a"
                                    " LayerNorm scale or offset): map it, or leave it out of the tree"])
            new[path] = np.full(stored.shape, IDENTITY[leaf], dtype=stored.dtype)
        return new

    def unmapped(self, flat: dict, shapes: dict, slots: dict | None = None) -> list[str]:
        placed = {slot.path for places in (slots or self.slots(flat, shapes)).values() for slot in places}
        return [path for path in flat if path not in placed]


# --------------------------------------------------------------------------------------------------
# A whole adapter declared around a model of such a framework
# --------------------------------------------------------------------------------------------------


def own_method(name: str, helper: str) -> Callable:
    """``name`` called on the model (its own ``encode``, ``decode``): not implemented when the model has none."""

    def call(model, *args):
        found = getattr(model, name, None)
        if not callable(found):
            raise NotImplementedError(f"{type(model).__name__} has no {name}(); give {helper}({name}=...)")
        return found(*args)

    return call


class DeclaredAdapter:
    """What ``JaxAdapter`` and ``KerasAdapter`` share: ``build`` makes the model, ``names`` maps the canonical weights,
    ``encode(model, src)`` and ``decode(model, tgt_in, memory, src)`` (by default the model's own methods), optionally
    ``greedy_decode(model, src, max_len)`` and ``train_step(model, src, tgt_in, tgt_out)``, more parts as keyword
    arguments. ``model_class`` is the subclass's ``Model``, without the parts the model has not (none of its own greedy
    loop or training step: not implemented)."""

    model_base: type

    def __init__(self, build: Callable, names: dict, *, conventions, encode: Callable | None = None,
                 decode: Callable | None = None, greedy_decode: Callable | None = None,
                 train_step: Callable | None = None, **parts: Callable):
        helper = type(self).__name__
        self.build, self.names, self.conventions = build, PytreeNames(names), conventions
        self.functions = {"encode": encode or own_method("encode", helper),
                          "decode": decode or own_method("decode", helper),
                          "greedy_decode": greedy_decode, "train_step": train_step}
        for part, function in parts.items():
            setattr(self, part, function)
        absent = {name: None for name in ("greedy_decode", "train_step") if self.functions[name] is None}
        base = self.model_base
        self.model_class = type(base.__name__, (base,), absent) if absent else base
