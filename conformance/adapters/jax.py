"""Helpers for an adapter around a JAX model (imports JAX): its parameter pytree by dotted path, and ``FlaxModel``
and ``JaxAdapter``, a whole ``Model`` and adapter around any Flax NNX encoder-decoder.

A JAX model keeps its parameters in a pytree (a Flax NNX ``State``, a Flax Linen ``params`` dict), not in modules with
``named_parameters()``. ``flatten`` gives its leaves by dotted path (``encoder.layers.0.attn.query.kernel``), and a
name map places the canonical weights among those paths (``conformance.adapters.pytrees.PytreeNames``: Flax's
(in, out) kernels, per-head kernels, fused projections, identity values for what the map leaves out).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from conformance.adapters.pytrees import DeclaredAdapter, PytreeNames, as_canonical, from_canonical
from conformance.config import ModelConfig
from conformance.weights import model_shapes

__all__ = ["FlaxModel", "JaxAdapter", "PytreeNames", "as_canonical", "flatten", "from_canonical", "parameter_count",
           "replace_leaves"]


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


class JaxAdapter(DeclaredAdapter):
    """A whole adapter around a Flax NNX model, declared: ``build(c, rngs)`` makes the module for a ``ModelConfig``
    (``rngs``: ``nnx.Rngs`` seeded with the suite's seed), ``names`` maps the canonical weights onto its parameters,
    ``encode(module, src)`` and ``decode(module, tgt_in, memory, src)`` (by default the module's own ``encode`` and
    ``decode`` methods), and optionally ``greedy_decode(module, src, max_len)`` and ``train_step(module, src, tgt_in,
    tgt_out)``. Its parts: ``build_model`` (a ``FlaxModel``) and ``parameter_count`` (the module's own parameters,
    counted without allocating them); add the parts your code has as keyword arguments (``positional_encoding=``,
    ``layer_norm=``...: functions of the part's arguments)."""

    model_base = FlaxModel

    def build_model(self, config, seed):
        from flax import nnx

        config = ModelConfig.from_dict(config)
        module = self.build(config, nnx.Rngs(int(seed)))
        return self.model_class(module, self.names, config, **self.functions)

    def parameter_count(self, config):
        from flax import nnx

        return parameter_count(lambda c: self.build(c, nnx.Rngs(0)), config)
