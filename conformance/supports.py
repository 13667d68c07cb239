"""The configurations a candidate supports: declared in ``Conventions.supports``, respected by every check.

Real implementations cannot build every configuration the checks draw: biases always on, ε fixed inside
the layers, d_ff tied to 4 d_model, one shared table. A candidate declares what it supports; the suite
then (1) *fits* each drawn example into it (``fit``: the unsupported value replaced by the first
supported one, so the example still runs), and (2) never calls the candidate outside it (``violation``:
the call is *not implemented*, with the declaration as the reason). An undeclared limit, a
``NotImplementedError`` raised for one drawn configuration, skips that example only (the plugin counts
it); a check is *not implemented* only when no example it drew could run.
"""

from __future__ import annotations

import dataclasses
import numbers

FEATURES = {
    "attention_bias": "whether the Q, K, V and output projections carry biases (True, False)",
    "eps": "the LayerNorm epsilon values, inside the square root (1e-5 is PyTorch's and the lesson's)",
    "d_ff_ratio": "d_ff as a multiple of d_model (4 in the paper: 2,048 = 4 x 512)",
    "share_embeddings": "one table E for the source and the target (True) or two (False)",
    "tie_output": "the output projection tied to the target embedding (True) or a W_out of its own (False)",
}
BOOLEAN = {"attention_bias", "share_embeddings", "tie_output"}


def validate(supports: dict) -> list[str]:
    """Problems with a declaration (unknown feature, wrong kind of value); empty when it is usable."""
    problems = []
    for feature, values in supports.items():
        if feature not in FEATURES:
            problems.append(f"unknown feature {feature!r} (known: {', '.join(FEATURES)})")
            continue
        if not isinstance(values, tuple | list) or not values:
            problems.append(f"{feature}: give a non-empty tuple of the supported values, not {values!r}")
            continue
        kind = bool if feature in BOOLEAN else numbers.Real
        wrong = [v for v in values if not isinstance(v, kind) or (kind is numbers.Real and isinstance(v, bool))]
        if wrong:
            problems.append(f"{feature}: {wrong} are not {'booleans' if kind is bool else 'numbers'}")
    return problems


def allowed(supports: dict, feature: str, value) -> bool:
    values = supports.get(feature)
    if values is None:
        return True
    if feature in BOOLEAN:
        return bool(value) in values
    return any(abs(float(value) - float(v)) <= 1e-12 * max(1.0, abs(float(v))) for v in values)


def violation(supports: dict, reasons: dict, **features) -> str | None:
    """Why a call with these feature values lies outside the declaration, or None. ``d_ff`` and ``d_model``
    together stand for the ratio."""
    if "d_ff" in features and "d_model" in features:
        d_ff, d_model = features.pop("d_ff"), features.pop("d_model")
        features["d_ff_ratio"] = d_ff / d_model if d_model else float("nan")
    for feature, value in features.items():
        if value is not None and not allowed(supports, feature, value):
            reason = f": {reasons[feature]}" if feature in reasons else ""
            return f"declares {feature} in {tuple(supports[feature])} only (asked for {value!r}){reason}"
    return None


def config_features(config) -> dict:
    """The features of a ``ModelConfig`` (or its dict)."""
    get = config.get if isinstance(config, dict) else lambda name: getattr(config, name)
    return {"attention_bias": get("attention_bias"), "eps": get("eps"), "d_ff": get("d_ff"),
            "d_model": get("d_model"), "share_embeddings": get("share_embeddings"),
            "tie_output": get("tie_output")}


def fit(value, supports: dict):
    """``value`` (a ``ModelConfig``, ``LayerSizes`` or ``ModelSizes``) moved into the declared configurations:
    each unsupported feature takes the first supported value. Anything else is returned unchanged."""
    from conformance.config import ModelConfig
    from conformance.scenarios import LayerSizes, ModelSizes

    if not supports:
        return value
    if isinstance(value, ModelSizes):
        return dataclasses.replace(value, config=fit(value.config, supports))
    if isinstance(value, ModelConfig):
        return value.replace(**_changes(supports, bias=value.attention_bias, eps=value.eps, d_ff=value.d_ff,
                                        d_model=value.d_model, share=value.share_embeddings,
                                        tie=value.tie_output, vocab=(value.src_vocab, value.tgt_vocab)))
    if isinstance(value, LayerSizes):
        changes = _changes(supports, bias=value.bias, eps=value.eps, d_ff=value.d_ff, d_model=value.d_model)
        renamed = {"attention_bias": "bias"}
        return dataclasses.replace(value, **{renamed.get(k, k): v for k, v in changes.items()})
    return value


def _changes(supports, *, bias, eps, d_ff, d_model, share=None, tie=None, vocab=None) -> dict:
    changes = {}
    if not allowed(supports, "attention_bias", bias):
        changes["attention_bias"] = supports["attention_bias"][0]
    if not allowed(supports, "eps", eps):
        changes["eps"] = float(supports["eps"][0])
    if d_model and not allowed(supports, "d_ff_ratio", d_ff / d_model):
        changes["d_ff"] = int(round(supports["d_ff_ratio"][0] * d_model))
    if share is not None and not allowed(supports, "share_embeddings", share):
        changes["share_embeddings"] = supports["share_embeddings"][0]
        if changes["share_embeddings"] and vocab[0] != vocab[1]:
            changes["tgt_vocab"] = vocab[0]
    if tie is not None and not allowed(supports, "tie_output", tie):
        changes["tie_output"] = supports["tie_output"][0]
    return changes


def describe(supports: dict, reasons: dict) -> list[str]:
    """One line per declared limit, for the report: "attention_bias in (True,): projections always carry biases"."""
    return [f"{feature} in {tuple(values)}" + (f": {reasons[feature]}" if feature in reasons else "")
            for feature, values in supports.items()]
