"""Helpers for an adapter around a Keras 3 model, on any backend (imports keras): its variables by a path that numbers
layers, ``KerasModel`` and ``KerasAdapter``, a whole ``Model`` and adapter around any Keras encoder-decoder.

Keras names a variable by its layers' names (``transformer/encoder_layer_1/multi_head_attention_3/query/kernel``),
which count every layer of a class made in the process: the index of a layer in its stack is not in the path.
``variables`` gives each variable a path that says it: a layer Keras named after its class is numbered among its
siblings of that class, in the order they were made (``encoder_layer.0``, ``encoder_layer.1``), a layer its code named
keeps the name (``encoder_layer.1.multi_head_attention.0.query.kernel``), so a name map can say ``{l}``. The weights
themselves go through ``conformance.adapters.pytrees.PytreeNames`` (Keras' kernels are (in, out); its attention's
per-head kernels). Values cross as NumPy arrays (``keras.ops.convert_to_numpy``), whatever the backend.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import keras
import numpy as np

from conformance.adapters.pytrees import DeclaredAdapter, PytreeNames
from conformance.config import ModelConfig
from conformance.weights import model_shapes

_COUNTER = re.compile(r"^(.*?)(?:_(\d+))?$")


def variables(model) -> dict[str, Any]:
    """Every variable of a built Keras layer or model by a dotted path whose layers are numbered (above)."""
    classes = {layer.path: type(layer).__name__ for layer in model._flatten_layers(include_self=False)
               if getattr(layer, "path", None)}
    found = {}
    for variable in model.weights:
        parts = variable.path.split("/")
        own = 1 if len(parts) > 2 and parts[0] == model.name else 0  # Keras prefixes the model's name inside call
        layers = tuple((part, classes.get("/".join(parts[: i + 1]), "")) for i, part in enumerate(parts[:-1])
                       if i >= own)
        found[layers, parts[-1]] = variable
    numbered = _numbered([layers for layers, _ in found])
    return {".".join([*numbered[layers], leaf]): variable for (layers, leaf), variable in found.items()}


def _snake(name: str) -> str:
    """A class name as Keras names its instances (``MultiHeadAttention`` -> ``multi_head_attention``)."""
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def _numbered(layer_paths: list[tuple]) -> dict[tuple, list[str]]:
    """Each layer path ((name, class), ...) -> its segments: a layer named by Keras after its class (``dense``,
    ``dense_3``: a name it made up, counting every such layer of the process) becomes ``dense.i``, its index among the
    siblings of that class in the order their variables come (the order the model made them); a layer its code named
    (``query``) keeps the name."""
    children: dict[tuple, dict[str, list[str]]] = {}
    for path in layer_paths:
        for depth, (name, _) in enumerate(path):
            siblings = children.setdefault(path[:depth], {}).setdefault(_COUNTER.match(name).group(1), [])
            if name not in siblings:
                siblings.append(name)
    numbered = {}
    for path in layer_paths:
        segments = []
        for depth, (name, cls) in enumerate(path):
            base = _COUNTER.match(name).group(1)
            made_up = bool(cls) and base == _snake(cls)
            segments += [base, str(children[path[:depth]][base].index(name))] if made_up else [name]
        numbered[path] = segments
    return numbered


def numpy(value) -> Any:
    """A backend tensor (or a dict, list, tuple of them) as NumPy arrays."""
    if isinstance(value, dict):
        return {key: numpy(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(numpy(item) for item in value)
    return keras.ops.convert_to_numpy(value) if keras.ops.is_tensor(value) else value


class KerasModel:
    """The protocol's ``Model`` around any Keras encoder-decoder ``model`` (built): weights through the name map over
    ``variables``, ``encode(model, src) -> memory`` and ``decode(model, tgt_in, memory, src) -> logits`` (Keras runs
    a layer with dropout off unless called with ``training=True``); greedy decoding and a training step only when
    given (the model's own)."""

    def __init__(self, model, names: dict | PytreeNames, config: ModelConfig | dict, *, encode: Callable,
                 decode: Callable, greedy_decode: Callable | None = None, train_step: Callable | None = None):
        self.model = model
        self.names = names if isinstance(names, PytreeNames) else PytreeNames(names)
        self.config = config if isinstance(config, ModelConfig) else ModelConfig.from_dict(config)
        self.shapes = model_shapes(self.config)
        self._encode, self._decode, self._greedy, self._train = encode, decode, greedy_decode, train_step

    def _flat(self) -> dict[str, np.ndarray]:
        return {path: numpy(variable.value) for path, variable in variables(self.model).items()}

    def load_weights(self, weights):
        found = variables(self.model)
        for path, value in self.names.write(self._flat(), weights, self.shapes).items():
            found[path].assign(value)

    def dump_weights(self):
        return self.names.read(self._flat(), self.shapes)

    def unmapped_parameters(self):
        flat = self._flat()
        return {path: int(np.size(flat[path])) for path in self.names.unmapped(flat, self.shapes)}

    def encode(self, src):
        return numpy(self._encode(self.model, src))

    def decode(self, tgt_in, memory, src):
        return numpy(self._decode(self.model, tgt_in, memory, src))

    def forward(self, src, tgt_in):
        # decode reads the memory encode returned, as the protocol's decode does: a plain array (a backend tensor would
        # carry Keras' implicit mask from the encoder to the decoder, and forward differ from decode(encode(src)))
        return self.decode(tgt_in, self.encode(src), src)

    def greedy_decode(self, src, max_len):
        return numpy(self._greedy(self.model, src, max_len))

    def train_step(self, src, tgt_in, tgt_out):
        return numpy(self._train(self.model, src, tgt_in, tgt_out))


def build_weights(model, encode: Callable, decode: Callable, vocab: int) -> None:
    """Make every variable of ``model``: Keras builds a layer on its first call (a two-token batch here, ids within the
    ``vocab`` smaller vocabulary: the torch backend raises on an id past a table, JAX clips it)."""
    ids = np.array([[1, 2]], dtype="int32") % vocab
    decode(model, ids, encode(model, ids), ids)


class KerasAdapter(DeclaredAdapter):
    """A whole adapter around a Keras 3 model, declared: ``build(c)`` makes the model for a ``ModelConfig`` (Keras'
    global seed set to the suite's first), ``names`` maps the canonical weights onto ``variables``, ``encode`` and
    ``decode`` (by default the model's own methods), optionally ``greedy_decode(model, src, max_len)`` and
    ``train_step(model, src, tgt_in, tgt_out)``; more parts as keyword arguments. Its parts: ``build_model`` (a
    ``KerasModel``) and ``parameter_count`` (the built model's trainable weights)."""

    model_base = KerasModel

    def _built(self, config: ModelConfig):
        model = self.build(config)
        vocab = min(config.src_vocab, config.tgt_vocab)
        build_weights(model, self.functions["encode"], self.functions["decode"], vocab)
        return model

    def build_model(self, config, seed):
        keras.utils.set_random_seed(int(seed))
        config = ModelConfig.from_dict(config)
        return self.model_class(self._built(config), self.names, config, **self.functions)

    def parameter_count(self, config):
        model = self._built(ModelConfig.from_dict(config))
        return sum(int(np.prod(variable.shape)) for variable in model.trainable_weights)
