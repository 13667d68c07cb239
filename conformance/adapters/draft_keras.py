"""``transformer-conformance template --from module:Name`` for a Keras 3 model class: an adapter draft on
``conformance.adapters.keras.KerasAdapter`` (any backend).

As for Flax (``draft_jax``): the constructor is planned from the suite's config, one small model is built with sizes
that tell its parameters apart and called once (Keras makes a layer's variables on its first call: the class's own
``encode`` and ``decode``, else ``model((src, tgt))``), and ``propose`` reads the name map off its variables by
``conformance.adapters.keras.variables`` (layers numbered in their stack, per-head kernels as their merged matrices).
Layers are numbered in the order their variables were made, which is the order the model calls them: a LayerNorm
order it states is the code's. What the model fixes becomes a declaration read off it: the LayerNorm epsilon
(``LayerNormalization.epsilon``), the attention's biases, one table or two, the output tied to the table.
"""

from __future__ import annotations

import inspect

import numpy as np

from conformance.adapters.construct import PROBE, Plan, plan
from conformance.adapters.draft import fixed_sizes, tying_of
from conformance.adapters.draft_jax import declared_limits, merged_heads, render, wide_heads
from conformance.adapters.propose import Parameter, Proposal, propose
from conformance.config import ModelConfig


def is_keras_class(target) -> bool:
    import sys

    keras = sys.modules.get("keras")
    return keras is not None and inspect.isclass(target) and issubclass(target, keras.layers.Layer)


def call_once(model, config: ModelConfig) -> None:
    """Make the model's variables: its ``encode`` and ``decode`` if it has them, else its ``call`` on (src, tgt)."""
    from conformance.adapters.keras import build_weights

    vocab = min(config.src_vocab, config.tgt_vocab)
    ids = np.array([[1, 2]], dtype="int32") % vocab
    if callable(getattr(model, "encode", None)) and callable(getattr(model, "decode", None)):
        build_weights(model, lambda m, src: m.encode(src), lambda m, tgt, memory, src: m.decode(tgt, memory, src),
                      vocab)
    else:
        model((ids, ids))


def probe(built: Plan) -> tuple[object | None, ModelConfig, str]:
    """(the built model, the config it was built with, why it could not be built); two vocabularies, else one."""
    failure = ""
    for config in (PROBE, PROBE.replace(tgt_vocab=PROBE.src_vocab)):
        try:
            model = built.build(config)
            call_once(model, config)
            return model, config, ""
        except Exception as exc:  # noqa: BLE001 - any error of the user's code: the draft says it and goes on
            failure = failure or f"{type(exc).__name__}: {exc}"
    return None, PROBE, failure


def parameters_of(model, config: ModelConfig) -> list[Parameter]:
    """Every variable of a built Keras model by its numbered path, its shape as the matrix it stands for, the class of
    the layer that holds it."""
    from conformance.adapters.keras import variables

    owners = {layer.path: type(layer).__name__ for layer in model._flatten_layers(include_self=False)
              if getattr(layer, "path", None)}
    found = []
    for path, variable in variables(model).items():
        owner = owners.get(variable.path.rpartition("/")[0], "")
        found.append(Parameter(path, merged_heads(tuple(variable.shape), path.rpartition(".")[2], config), owner))
    return found


def draft(module_name: str, target) -> str:
    """The adapter source for a Keras model class ``target`` of ``module_name``."""
    import keras

    from conformance.adapters.keras import variables

    built = plan(target)
    model, config, failure = probe(built)
    proposal, supports, reasons = Proposal(), {}, {}
    if model is not None:
        parameters = parameters_of(model, config)
        config = tying_of(parameters, built, config)
        proposal = propose(parameters, config)
        proposal.guesses = [g for g in proposal.guesses if "outside nn.Linear" not in g]  # Keras' kernels are x @ W
        epsilons = {float(layer.epsilon) for layer in model._flatten_layers(include_self=False)
                    if isinstance(layer, keras.layers.LayerNormalization)}
        supports, reasons = declared_limits(epsilons, "keras.layers.LayerNormalization(epsilon={:g})",
                                            list(variables(model)), proposal)
        proposal.guesses += fixed_sizes(built) + wide_heads(parameters, config)
    return render(module_name, target, built, proposal, supports, reasons, failure, kind="keras")
