"""The configurations a candidate supports: declared in ``Conventions.supports``, respected by every check.

Real implementations cannot build every configuration the checks draw: biases always on, ε fixed inside
the layers, d_ff tied to 4 d_model, one shared table, learned positions for 100 positions, label smoothing
fixed inside the loss. A candidate declares what it supports; the suite then (1) *fits* each drawn example
into it (``fit``: the unsupported value replaced by the first supported one, a sequence cut to the longest
supported, so the example still runs), and (2) never calls the candidate outside it (``violation``: the call
is *not implemented*, with the declaration as the reason). An undeclared limit, a ``NotImplementedError``
raised for one drawn configuration, skips that example only (the plugin counts it); a check is *not
implemented* only when no example it drew could run.

A declaration binds the parts that *build* with the value (``BINDS``), not a part that takes it as an argument
of its formula: ``eps`` is the LayerNorm epsilon of the layers and the model, and the ``layer_norm`` function,
which is given its eps on every call, is asked any.
"""

from __future__ import annotations

import dataclasses
import numbers

FEATURES = {
    "attention_bias": "whether the Q, K, V and output projections carry biases (True, False)",
    "eps": "the LayerNorm epsilon values of the layers and the model, inside the square root (1e-5 is PyTorch's"
           " and the lesson's)",
    "d_ff_ratio": "d_ff as a multiple of d_model (4 in the paper: 2,048 = 4 x 512)",
    "share_embeddings": "one table E for the source and the target (True) or two (False)",
    "tie_output": "the output projection tied to the target embedding (True) or a W_out of its own (False)",
    "max_len": "the most positions a sequence may have (one number: learned positions or a positional table of"
               " that many rows)",
    "label_smoothing": "the label-smoothing eps values of the loss (0.1 in the paper, §5.4)",
    "h": "the numbers of attention heads the code builds (8 in the paper): a model whose code fixes its heads",
    "N": "the numbers of layers per stack the code builds (6 in the paper): a model whose code fixes its depth",
}
COUNTS = {"h", "N"}  # positive integers
BOOLEAN = {"attention_bias", "share_embeddings", "tie_output"}
LIMITS = {"max_len"}  # one number, the most allowed; every other feature: a tuple of the values allowed
# The parts each feature binds (the model: build_model, its every method, and parameter_count's configuration).
BINDS = {
    "attention_bias": "multi_head_attention, the layers and sublayers, the model",
    "eps": "the layers and sublayers, the model (not the layer_norm function: it takes eps as an argument)",
    "d_ff_ratio": "feed_forward, the layers and sublayers, the model",
    "share_embeddings": "the model",
    "tie_output": "the model",
    "max_len": "positional_encoding (its n), the model (every source, decoder input and greedy max_len)",
    "label_smoothing": "label_smoothed_loss (its epsilon), the model (the recipe train_step follows)",
    "h": "multi_head_attention, the layers and the attention sublayer, the model",
    "N": "the model",
}
# Features that change no parameter count: a count is asked in the configuration the candidate declares.
UNCOUNTED = ("eps", "label_smoothing", "h")  # h: where the declared heads divide d_model (the same width)


def validate(supports: dict) -> list[str]:
    """Problems with a declaration (unknown feature, wrong kind of value); empty when it is usable."""
    problems = []
    for feature, values in supports.items():
        if feature not in FEATURES:
            problems.append(f"unknown feature {feature!r} (known: {', '.join(FEATURES)})")
        elif feature in LIMITS:  # at least <s> and one token: a decoder input the checks can shift and compare
            if not isinstance(values, numbers.Integral) or isinstance(values, bool) or values < 2:
                problems.append(f"{feature}: give one integer, the most allowed, at least 2, not {values!r}")
        elif not isinstance(values, tuple | list) or not values:
            problems.append(f"{feature}: give a non-empty tuple of the supported values, not {values!r}")
        else:
            problems += _wrong_values(feature, values)
    return problems


def _wrong_values(feature: str, values) -> list[str]:
    if feature in COUNTS:
        wrong = [v for v in values if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < 1]
        return [f"{feature}: {wrong} are not positive integers"] if wrong else []
    kind = bool if feature in BOOLEAN else numbers.Real
    wrong = [v for v in values if not isinstance(v, kind) or (kind is numbers.Real and isinstance(v, bool))]
    if wrong:
        return [f"{feature}: {wrong} are not {'booleans' if kind is bool else 'numbers'}"]
    if feature == "label_smoothing" and not all(0 <= v < 1 for v in values):
        return [f"{feature}: {list(values)} must lie in [0, 1) (eps of q = (1 - eps) one_hot + eps / V)"]
    return []


def allowed(supports: dict, feature: str, value) -> bool:
    values = supports.get(feature)
    if values is None:
        return True
    if feature in LIMITS:
        return value <= values
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
            if feature in LIMITS:
                return f"declares {feature} {supports[feature]} (asked for {value}){reason}"
            return f"declares {feature} in {tuple(supports[feature])} only (asked for {value!r}){reason}"
    return None


def config_features(config) -> dict:
    """The features of a ``ModelConfig`` (or its dict)."""
    get = config.get if isinstance(config, dict) else lambda name: getattr(config, name)
    recipe = get("recipe")
    smoothing = recipe.get("label_smoothing") if isinstance(recipe, dict) else getattr(recipe, "label_smoothing", None)
    return {"attention_bias": get("attention_bias"), "eps": get("eps"), "d_ff": get("d_ff"),
            "d_model": get("d_model"), "share_embeddings": get("share_embeddings"),
            "tie_output": get("tie_output"), "label_smoothing": smoothing, "h": get("h"), "N": get("N")}


def fit(value, supports: dict):
    """``value`` moved into the declared configurations: each unsupported feature takes the first supported value,
    a sequence longer than ``max_len`` is cut to it. A ``ModelConfig``, ``LayerSizes``, ``ModelSizes`` (its lengths
    too) or ``SmoothedLossProblem``; anything else is returned unchanged."""
    from conformance.config import ModelConfig
    from conformance.problems.scenarios import LayerSizes, ModelSizes, SmoothedLossProblem

    if not supports:
        return value
    if isinstance(value, ModelSizes):
        longest = supports.get("max_len", max(value.S, value.T))
        return dataclasses.replace(value, config=fit(value.config, supports), S=min(value.S, longest),
                                   T=min(value.T, longest))
    if isinstance(value, ModelConfig):
        return _fit_config(value, supports)
    if isinstance(value, LayerSizes):
        if not allowed(supports, "h", value.h):  # the declared heads over the same width, where they divide it
            h = int(supports["h"][0])
            d_k = value.d_model // h if value.d_model % h == 0 else value.d_k
            d_ff = value.d_ff if value.d_model % h == 0 else max(1, round(value.d_ff * h * d_k / value.d_model))
            value = dataclasses.replace(value, h=h, d_k=d_k, d_ff=d_ff)
        changes = _changes(supports, bias=value.bias, eps=value.eps, d_ff=value.d_ff, d_model=value.d_model)
        renamed = {"attention_bias": "bias"}
        return dataclasses.replace(value, **{renamed.get(k, k): v for k, v in changes.items()})
    if isinstance(value, SmoothedLossProblem) and not allowed(supports, "label_smoothing", value.eps):
        return value._replace(eps=float(supports["label_smoothing"][0]))
    return value


def fit_uncounted(config, supports: dict):
    """``config`` (a ``ModelConfig``) with the features no parameter count depends on (``UNCOUNTED``) moved into
    the declaration, the rest kept: the same count, asked in a configuration the candidate builds."""
    uncounted = {feature: supports[feature] for feature in UNCOUNTED if feature in supports}
    if "h" in uncounted and config.d_model % int(uncounted["h"][0]):  # fitted, d_model would change: the count too
        del uncounted["h"]
    return _fit_config(config, uncounted)


def _fit_config(config, supports: dict):
    if not allowed(supports, "h", config.h):  # the declared heads over the same width, where they divide it
        h = int(supports["h"][0])
        if config.d_model % h:  # else each head as wide as drawn: d_model follows, and d_ff in ratio
            d_model = h * max(1, config.d_model // config.h)
            config = config.replace(h=h, d_model=d_model, d_ff=max(1, round(config.d_ff * d_model / config.d_model)))
        config = config.replace(h=h)
    if not allowed(supports, "N", config.N):
        config = config.replace(N=int(supports["N"][0]))
    changes = _changes(supports, bias=config.attention_bias, eps=config.eps, d_ff=config.d_ff,
                       d_model=config.d_model, share=config.share_embeddings, tie=config.tie_output,
                       vocab=(config.src_vocab, config.tgt_vocab))
    if not allowed(supports, "label_smoothing", config.recipe.label_smoothing):
        changes["recipe"] = dataclasses.replace(config.recipe, label_smoothing=float(supports["label_smoothing"][0]))
    return config.replace(**changes) if changes else config


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
