"""Helpers for an adapter around a JAX model (imports JAX): canonical weights in and out of a parameter pytree, and
``FlaxModel``, a whole ``Model`` around any Flax NNX encoder-decoder.

A JAX model keeps its parameters in a pytree (a Flax NNX ``State``, a Flax Linen ``params`` dict, Keras' variables),
not in modules with ``named_parameters()``. ``flatten`` gives its leaves by dotted path (``encoder.layers.0.attn.
query.kernel``), and a name map (``conformance.adapters.names``: ``{l}``, ``*``, fused ``W_QKV``, copies of a
shared table) places the canonical weights among those paths, as it does for PyTorch. What differs is how a weight
is stored, read off its shape against the canonical one (``conformance.weights.model_shapes``):

* the orientation: Flax's ``Dense``/``nnx.Linear`` kernel and Keras' ``Dense`` kernel are (in, out), already the
  canonical x @ W; a path ending in ``.T`` is stored (out, in) (a port of PyTorch weights);
* per-head kernels: Flax's ``MultiHeadAttention`` (``DenseGeneral``) and Keras' ``MultiHeadAttention`` keep the query,
  key and value kernels as (d_model, h, d_k), their biases as (h, d_k), and the output kernel as (h, d_k, d_model):
  the canonical (d_model, d_model) matrix is that array with its head axes merged, heads in order (head i is columns
  i d_k .. (i+1) d_k - 1, the paper's concatenation);
* fused projections: a block of the output axis of the merged matrix, as for PyTorch ((d_model, 3, h, d_k) is
  [Q | K | V]).

A parameter the map leaves out is set to its identity value by ``load`` when it is a bias, a LayerNorm scale or
offset (the protocol's rule for an output bias or a final LayerNorm); any other is an error naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from conformance.adapters.names import NameMap, NameMapError, Slot
from conformance.config import ModelConfig
from conformance.weights import model_shapes

IDENTITY = {"bias": 0.0, "beta": 0.0, "scale": 1.0, "gamma": 1.0}  # leaves load sets when no canonical name has them
OUTPUT_LEAVES = ("W_O",)  # a per-head kernel whose head axes come first: (h, d_k, d_model)


# --------------------------------------------------------------------------------------------------
# Pytrees by path
# --------------------------------------------------------------------------------------------------


def path_text(path) -> str:
    """A pytree key path as dotted text: ``(DictKey('encoder'), SequenceKey(0), ...)`` -> ``encoder.0...``; the
    ``.value`` of a Flax ``Variable`` is left out (it is the parameter itself)."""
    keys = [getattr(k, "key", getattr(k, "idx", getattr(k, "name", k))) for k in path]
    if len(path) > 1 and isinstance(path[-1], jax.tree_util.GetAttrKey) and path[-1].name == "value":
        keys = keys[:-1]
    return ".".join(str(key).replace("/", ".") for key in keys)


def flatten(tree) -> dict[str, Any]:
    """Every leaf of ``tree`` by its dotted path."""
    return {path_text(path): leaf for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]}


def replace_leaves(tree, new: dict[str, Any]):
    """``tree`` with the leaves at ``new``'s paths replaced (a new tree: JAX arrays are immutable)."""
    return jax.tree_util.tree_map_with_path(lambda path, leaf: new.get(path_text(path), leaf), tree)


def keras_variables(layer) -> dict[str, Any]:
    """A Keras layer's or model's variables by dotted path (``variable.path``, ``/`` read as ``.``)."""
    return {variable.path.replace("/", "."): variable for variable in layer.weights}


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
# A whole Model around a Flax NNX module
# --------------------------------------------------------------------------------------------------


class FlaxModel:
    """The protocol's ``Model`` around any Flax NNX encoder-decoder ``module``: weights through the name map, ``encode``
    and ``decode`` as the adapter's functions ``encode(module, src) -> memory`` and ``decode(module, tgt_in, memory,
    src) -> logits`` (evaluation mode: the module is put in ``eval()``, so dropout is off and needs no key). Token ids
    and memory arrive as ``jax.Array``s when the adapter declares ``Conventions(arrays="jax")``; results may be
    ``jax.Array``s. Greedy decoding and training are the module's own: pass ``greedy_decode(module, src, max_len)``
    and ``train_step(module, src, tgt_in, tgt_out) -> {"loss", "lr"}`` when it has them."""

    def __init__(self, module, names: dict | PytreeNames, config: ModelConfig | dict, *,
                 encode: Callable, decode: Callable, greedy_decode: Callable | None = None,
                 train_step: Callable | None = None):
        from flax import nnx

        self.nnx, self.module = nnx, module
        self.names = names if isinstance(names, PytreeNames) else PytreeNames(names)
        self.config = config if isinstance(config, ModelConfig) else ModelConfig.from_dict(config)
        # compiled once per shape, as a JAX user runs a model: op by op, each new shape compiles every operation
        self._encode, self._decode = nnx.jit(encode), nnx.jit(decode)
        self._greedy, self._train = greedy_decode, train_step
        self.module.eval()

    def _params(self):
        return self.nnx.state(self.module, self.nnx.Param)

    def load_weights(self, weights):
        state = self._params()
        new = self.names.write(flatten(state), weights, model_shapes(self.config))
        self.nnx.update(self.module, replace_leaves(state, {path: jax.numpy.asarray(v) for path, v in new.items()}))

    def dump_weights(self):
        return self.names.read(flatten(self._params()), model_shapes(self.config))

    def unmapped_parameters(self):
        flat = flatten(self._params())
        return {path: int(np.size(flat[path])) for path in self.names.unmapped(flat, model_shapes(self.config))}

    def encode(self, src):
        return self._encode(self.module, src)

    def decode(self, tgt_in, memory, src):
        return self._decode(self.module, tgt_in, memory, src)

    def forward(self, src, tgt_in):
        return self.decode(tgt_in, self.encode(src), src)

    def greedy_decode(self, src, max_len):
        if self._greedy is None:
            raise NotImplementedError("the model has no greedy decoding of its own (FlaxModel(greedy_decode=...))")
        return self._greedy(self.module, src, max_len)

    def train_step(self, src, tgt_in, tgt_out):
        if self._train is None:
            raise NotImplementedError("the model has no training step of its own (FlaxModel(train_step=...))")
        self.module.train()
        try:
            return self._train(self.module, src, tgt_in, tgt_out)
        finally:
            self.module.eval()


def parameter_count(build: Callable[[ModelConfig], Any], config: ModelConfig | dict) -> int:
    """The number of parameters of the Flax NNX module ``build(config)`` makes, counted on its abstract state
    (``nnx.eval_shape``: nothing allocated, so the base model costs nothing)."""
    from flax import nnx

    config = config if isinstance(config, ModelConfig) else ModelConfig.from_dict(config)
    abstract = nnx.eval_shape(lambda: build(config))
    return sum(int(np.prod(leaf.shape)) for leaf in flatten(nnx.state(abstract, nnx.Param)).values())


def _method(name: str) -> Callable:
    def call(module, *args):
        found = getattr(module, name, None)
        if not callable(found):
            raise NotImplementedError(f"{type(module).__name__} has no {name}(); give JaxAdapter({name}=...)")
        return found(*args)

    return call


class JaxAdapter:
    """A whole adapter around a Flax NNX model, declared: ``build(c, rngs)`` makes the module for a ``ModelConfig``
    (``rngs``: ``nnx.Rngs`` seeded with the suite's seed), ``names`` maps the canonical weights onto its parameters,
    ``encode(module, src)`` and ``decode(module, tgt_in, memory, src)`` (by default the module's own ``encode`` and
    ``decode`` methods), and optionally ``greedy_decode(module, src, max_len)`` and ``train_step(module, src, tgt_in,
    tgt_out)``. Its parts: ``build_model`` (a ``FlaxModel``) and ``parameter_count`` (the module's own parameters,
    counted without allocating them); add the parts your code has as keyword arguments (``positional_encoding=``,
    ``layer_norm=``...: functions of the part's arguments)."""

    def __init__(self, build: Callable, names: dict, *, conventions, encode: Callable | None = None,
                 decode: Callable | None = None, greedy_decode: Callable | None = None,
                 train_step: Callable | None = None, **parts: Callable):
        self.build, self.names, self.conventions = build, PytreeNames(names), conventions
        self.functions = {"encode": encode or _method("encode"), "decode": decode or _method("decode"),
                          "greedy_decode": greedy_decode, "train_step": train_step}
        for part, function in parts.items():
            setattr(self, part, function)
        # the model's class says which parts it has: without its own greedy loop or training step, none
        absent = {name: None for name in ("greedy_decode", "train_step") if self.functions[name] is None}
        self.model_class = type("FlaxModel", (FlaxModel,), absent) if absent else FlaxModel

    def build_model(self, config, seed):
        from flax import nnx

        config = ModelConfig.from_dict(config)
        module = self.build(config, nnx.Rngs(int(seed)))
        return self.model_class(module, self.names, config, **self.functions)

    def parameter_count(self, config):
        from flax import nnx

        return parameter_count(lambda c: self.build(c, nnx.Rngs(0)), config)
