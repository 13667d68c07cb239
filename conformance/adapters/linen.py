"""``LinenModel`` and ``LinenAdapter``: a whole ``Model`` and adapter around any Flax Linen encoder-decoder (imports
JAX and Flax).

A Linen module holds no parameters: ``module.init(rng, ...)`` makes them, a ``params`` dict that every call takes
back (``module.apply({"params": params}, ...)``, or ``module.bind(...)`` to call its methods). The model keeps that
dict; its leaves by dotted path (``encoderblock_0.MultiHeadDotProductAttention_0.query.kernel``, Linen's own names)
are what a name map places the canonical weights among (``conformance.adapters.pytrees.PytreeNames``: Flax's (in,
out) kernels, per-head kernels merged, fused projections, identity values for what the map leaves out), as for Flax
NNX (``conformance.adapters.jax``).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import numpy as np

from conformance.adapters.jax import flatten, replace_leaves
from conformance.adapters.pytrees import DeclaredAdapter, PytreeNames
from conformance.config import ModelConfig
from conformance.weights import model_shapes

__all__ = ["LinenAdapter", "LinenModel", "parameter_count"]


def example_ids(config: ModelConfig) -> tuple[np.ndarray, np.ndarray]:
    """A source and a target of two tokens each: what ``init`` traces the module with (its sizes come from the
    config, not from these)."""
    return np.ones((1, 2), dtype=np.int32), np.ones((1, 2), dtype=np.int32)


def initialise(module, rng, config: ModelConfig, encode: Callable, decode: Callable) -> dict:
    """The module's ``params``, made by tracing the adapter's own ``encode`` then ``decode`` (so a module whose
    ``__call__`` takes other arguments needs nothing more)."""
    src, tgt_in = example_ids(config)
    return module.init(rng, src, tgt_in, method=lambda m, s, t: decode(m, t, encode(m, s), s))["params"]


class LinenModel:
    """The protocol's ``Model`` around a Flax Linen ``module`` and its ``params``: weights through the name map,
    ``encode`` and ``decode`` as the adapter's functions ``encode(module, src) -> memory`` and ``decode(module, tgt_in,
    memory, src) -> logits`` called on the module bound to the params (``module.bind``), each compiled once per shape.
    Evaluation mode is the module's as built: build it deterministic (dropout off), as Flax's examples do for
    evaluation. ``greedy_decode(model, src, max_len)`` and ``train_step(model, src, tgt_in, tgt_out) -> {"loss", "lr"}``
    receive this object: ``model.module``, ``model.params`` (a training step assigns the updated ones) and
    ``model.config``. ``attention_weights`` asks every ``nn.MultiHeadDotProductAttention`` to sow its weights."""

    def __init__(self, module, params: dict, names: dict | PytreeNames, config: ModelConfig | dict, *,
                 encode: Callable, decode: Callable, greedy_decode: Callable | None = None,
                 train_step: Callable | None = None):
        self.module, self.params = module, params
        self.names = names if isinstance(names, PytreeNames) else PytreeNames(names)
        self.config = config if isinstance(config, ModelConfig) else ModelConfig.from_dict(config)
        bound = module.bind
        self._encode = jax.jit(lambda params, src: encode(bound({"params": params}), src))
        self._decode = jax.jit(lambda params, tgt_in, memory, src: decode(bound({"params": params}), tgt_in, memory,
                                                                           src))
        self._greedy, self._train, self._functions = greedy_decode, train_step, (encode, decode)

    def load_weights(self, weights):
        new = self.names.write(flatten(self.params), weights, model_shapes(self.config))
        self.params = replace_leaves(self.params, {path: jax.numpy.asarray(v) for path, v in new.items()})

    def dump_weights(self):
        return self.names.read(flatten(self.params), model_shapes(self.config))

    def unmapped_parameters(self):
        flat = flatten(self.params)
        return {path: int(np.size(flat[path])) for path in self.names.unmapped(flat, model_shapes(self.config))}

    def encode(self, src):
        return self._encode(self.params, src)

    def decode(self, tgt_in, memory, src):
        return self._decode(self.params, tgt_in, memory, src)

    def forward(self, src, tgt_in):
        return self.decode(tgt_in, self.encode(src), src)

    def attention_weights(self, src, tgt_in):
        """Each attention's weights by sublayer name, from a forward pass in which every Flax
        ``MultiHeadDotProductAttention`` is asked to ``sow`` them (``nn.intercept_methods``): the attention the name
        map places ``{sublayer}.W_Q`` (or W_QKV) in is that sublayer's."""
        from flax import linen as nn

        def sow_weights(next_fun, args, kwargs, context):
            if isinstance(context.module, nn.MultiHeadDotProductAttention) and context.method_name == "__call__":
                kwargs = {**kwargs, "sow_weights": True}
            return next_fun(*args, **kwargs)

        encode, decode = self._functions
        with nn.intercept_methods(sow_weights):
            _, state = self.module.apply({"params": self.params}, src, tgt_in, mutable=["intermediates"],
                                         method=lambda m, s, t: decode(m, t, encode(m, s), s))
        sown = {path.removeprefix("intermediates.").removesuffix(".attention_weights.0"): value
                for path, value in flatten(state).items() if ".attention_weights." in path}
        return {sublayer: np.asarray(sown[module]) for sublayer, module in self._attention_modules().items()
                if module in sown}

    def _attention_modules(self) -> dict[str, str]:
        """``encoder.0.self_attn`` -> the Linen path of the attention module its projections lie in."""
        flat, found = flatten(self.params), {}
        for sublayer in [f"{stack}.{layer}.{kind}" for layer in range(self.config.N)
                         for stack, kind in (("encoder", "self_attn"), ("decoder", "self_attn"),
                                             ("decoder", "cross_attn"))]:
            for projection in ("W_Q", "W_QKV"):
                try:
                    (slot, *_), = self.names.map.resolve([f"{sublayer}.{projection}"], list(flat)).values()
                except ValueError:
                    continue
                found[sublayer] = slot.path.rsplit(".", 2)[0]  # <attention>.query.kernel
                break
        return found

    def greedy_decode(self, src, max_len):
        if self._greedy is None:
            raise NotImplementedError("the model has no greedy decoding of its own (LinenAdapter(greedy_decode=...))")
        return self._greedy(self, src, max_len)

    def train_step(self, src, tgt_in, tgt_out):
        if self._train is None:
            raise NotImplementedError("the model has no training step of its own (LinenAdapter(train_step=...))")
        return self._train(self, src, tgt_in, tgt_out)


def parameter_count(module, config: ModelConfig, encode: Callable, decode: Callable) -> int:
    """The number of parameters ``module`` makes, counted on their shapes alone (``jax.eval_shape``: nothing
    allocated, so the base model costs nothing)."""
    shapes = jax.eval_shape(lambda: initialise(module, jax.random.key(0), config, encode, decode))
    return sum(int(np.prod(leaf.shape)) for leaf in flatten(shapes).values())


class LinenAdapter(DeclaredAdapter):
    """A whole adapter around a Flax Linen model, declared: ``build(c)`` makes the module for a ``ModelConfig`` (built
    for evaluation: ``deterministic=True`` where the module has it), ``names`` maps the canonical weights onto its
    parameters, ``encode(module, src)`` and ``decode(module, tgt_in, memory, src)`` (by default the module's own
    ``encode`` and ``decode`` methods, called with these arguments in this order), and optionally
    ``greedy_decode(model, src, max_len)`` and ``train_step(model, src, tgt_in, tgt_out)`` (``model``: the
    ``LinenModel``). The parameters are made by ``module.init`` with the suite's seed, traced through ``encode`` then
    ``decode``. Its parts: ``build_model`` (a ``LinenModel``) and ``parameter_count``; add the parts your code has as
    keyword arguments (``positional_encoding=``, ``layer_norm=``...: functions of the part's arguments)."""

    model_base = LinenModel

    def build_model(self, config, seed):
        config = ModelConfig.from_dict(config)
        module = self.build(config)
        encode, decode = self.functions["encode"], self.functions["decode"]
        params = initialise(module, jax.random.key(int(seed)), config, encode, decode)
        return self.model_class(module, params, self.names, config, **self.functions)

    def parameter_count(self, config):
        config = ModelConfig.from_dict(config)
        return parameter_count(self.build(config), config, self.functions["encode"], self.functions["decode"])
