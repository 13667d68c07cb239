"""Explaining a failed comparison: the likely cause (a known bug whose output matches) and, for a
composite (encode, decode, the whole model), the first layer and sublayer that diverges.

Components first, composites after: when a composite disagrees with the oracle, the candidate's own
``encoder_layer`` / ``decoder_layer`` are rerun on the oracle's input to each layer, and then its
``multi_head_attention`` / ``feed_forward`` on the oracle's input to each sublayer, so the message
says where the bug sits ("first divergence: decoder.1 (cross-attention sublayer suspected)").

Explanations cost extra calls, so they are computed only when a comparison has failed, and inside
hypothesis only on the final (reported) replay of the failing example, not while it shrinks.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from conformance import diagnosis, oracle
from conformance import formulas as np_formulas
from conformance.compare import measure
from conformance.errors import CheckFailure, ConformanceOutcome
from conformance.scenarios import key_padding, loaded_model
from conformance.tolerances import LAYER, MODEL, Tolerance, for_dtype
from conformance.weights import sub_weights


def reporting() -> bool:
    """True outside hypothesis, and on hypothesis's final replay of a failing example."""
    try:
        from hypothesis.control import current_build_context

        return bool(current_build_context().is_final)
    except Exception:  # no build context: not inside a hypothesis test
        return True


def agrees(actual, expected, tol: Tolerance) -> bool:
    return np.shape(actual) == np.shape(expected) and measure(actual, expected, tol).passed


def likely_cause(actual, alternatives: dict[str, np.ndarray], tol: Tolerance) -> str | None:
    """The known bug whose output ``actual`` matches; "one of: A; B" when several match (small sizes can
    make two bugs give the same numbers), None when none does."""
    matches = [cause for cause, output in alternatives.items() if agrees(actual, output, tol)]
    if len(matches) > 1:
        return "one of: " + "; ".join(matches[:3])
    return matches[0] if matches else None


def close(check, actual, expected, tol: Tolerance, *, what: str,
          alternatives: Callable[[], dict[str, np.ndarray]] | None = None,
          explain: Callable[[], str | None] | None = None, likely: str | None = None,
          structure: Callable[[], str | None] | None = None, rerun: Callable | None = None):
    """``check.close`` whose likely-cause candidates and explanation are computed only on failure.

    ``alternatives()`` returns {cause: what a known bug outputs}; ``explain()`` a line such as
    "first divergence: encoder.1 (...)". Both land in the failure message and its fields. ``likely``
    is a fixed likely cause, for a claim whose failure has one known explanation. ``structure()`` names
    structural patterns (``diagnosis.find_structure``: an extra final LayerNorm, padded positions
    replaced by a constant) on a line of its own. ``rerun(other)`` computes ``actual`` with another
    candidate on the same input: the mutants whose output the candidate's matches are named.
    """
    __tracebackhide__ = True
    try:
        return check.close(actual, expected, tol, what=what, rerun=rerun)
    except CheckFailure as failure:
        if reporting():
            _annotate(failure, actual, tol, alternatives, explain, likely, structure)
        raise


def _annotate(failure: CheckFailure, actual, tol, alternatives, explain, likely, structure=None) -> None:
    cause = _quietly(lambda: likely_cause(actual, alternatives(), tol)) if alternatives else None
    cause = cause or likely
    where = _safely(explain) if explain else None
    patterns = (_quietly(structure) or []) if structure else []
    shape = diagnosis.fmt_structural(patterns)
    if patterns:
        failure.fields["patterns"] = patterns
    lines = [f"  {line}" for line in (f"likely cause: {cause}" if cause else None, where, shape) if line]
    if lines:
        failure.fields["likely_cause"] = cause or shape or where
        failure.message = "\n".join([failure.message, *lines])
        failure.args = (failure.message,)


def _quietly(fn: Callable):
    """A likely cause that cannot be computed is simply not offered."""
    try:
        return fn()
    except Exception:
        return None


def _safely(fn: Callable):
    """An explanation must never hide the failure it explains."""
    try:
        return fn()
    except ConformanceOutcome as exc:
        return f"(could not localise: {exc.message.splitlines()[0]})"
    except Exception as exc:  # a bug in the explanation; say so, keep the failure
        return f"(could not localise: {type(exc).__name__}: {exc})"


# --------------------------------------------------------------------------------------------------
# Likely causes: the oracle run with one known bug
# --------------------------------------------------------------------------------------------------


def variant_outputs(part: str, run: Callable[[str], np.ndarray]) -> dict[str, np.ndarray]:
    """{cause: run(variant)} for every known bug of ``part`` (see ``oracle.VARIANTS_BY_PART``)."""
    outputs = {}
    for variant in oracle.variants_for(part):
        try:
            outputs[variant] = run(variant)
        except Exception:  # a variant that cannot run on this input (shapes) explains nothing here
            continue
    return outputs


# --------------------------------------------------------------------------------------------------
# First divergence
# --------------------------------------------------------------------------------------------------


def _layer_tol(candidate) -> Tolerance:
    return for_dtype(LAYER, candidate.conventions.dtype)


def suspect_in_encoder_layer(candidate, x, w, h, eps, keep) -> str:
    """Which part of one encoder layer disagrees when fed the oracle's own sublayer inputs."""
    want, tol = oracle.encoder_sublayers(x, w, h, eps, keep), _layer_tol(candidate)
    if candidate.provides("multi_head_attention"):
        got, _ = candidate.multi_head_attention(x, x, x, sub_weights(w, "self_attn."), h, key_padding(keep, x.shape[1]))
        if not agrees(got, want["self_attn"], tol):
            return "self-attention sublayer suspected"
    if candidate.provides("feed_forward") and not agrees(
            candidate.feed_forward(want["norm1"], sub_weights(w, "ffn.")), want["ffn"], tol):
        return "feed-forward sublayer suspected"
    return _wiring(candidate, "the padding mask")


def suspect_in_decoder_layer(candidate, y, memory, w, h, eps, tgt_keep, src_keep) -> str:
    """Which part of one decoder layer disagrees when fed the oracle's own sublayer inputs."""
    want, tol = oracle.decoder_sublayers(y, memory, w, h, eps, tgt_keep, src_keep), _layer_tol(candidate)
    if candidate.provides("multi_head_attention"):
        self_keep = np.broadcast_to(want["self_keep"], (y.shape[0], *want["self_keep"].shape[1:]))
        got, _ = candidate.multi_head_attention(y, y, y, sub_weights(w, "self_attn."), h, self_keep)
        if not agrees(got, want["self_attn"], tol):
            return "masked self-attention sublayer suspected"
        h1 = want["norm1"]
        got, _ = candidate.multi_head_attention(h1, memory, memory, sub_weights(w, "cross_attn."), h,
                                                key_padding(src_keep, y.shape[1]))
        if not agrees(got, want["cross_attn"], tol):
            return "cross-attention sublayer suspected"
    if candidate.provides("feed_forward") and not agrees(
            candidate.feed_forward(want["norm2"], sub_weights(w, "ffn.")), want["ffn"], tol):
        return "feed-forward sublayer suspected"
    return _wiring(candidate, "the causal mask, the padding masks of the self- and the cross-attention, which"
                              " states feed the cross-attention")


def _wiring(candidate, extra: str) -> str:
    if not (candidate.provides("multi_head_attention") and candidate.provides("feed_forward")):
        return "no multi_head_attention and feed_forward parts to test its sublayers alone"
    return (f"its sublayers agree with the oracle on their own, so the layer's wiring is suspected"
            f" (residual connections, LayerNorm placement, {extra})")


def _layer_cause(part: str, got, run: Callable[[str], np.ndarray], tol: Tolerance) -> str:
    cause = likely_cause(got, variant_outputs(part, run), tol)
    return f"; likely cause: {cause}" if cause else ""


def encoder_divergence(candidate, config, weights, src, model: oracle.OracleModel) -> str | None:
    """"first divergence: encoder.l (...)" or None when every encoder layer agrees on the oracle's inputs."""
    if not candidate.provides("encoder_layer"):
        return None
    states, keep, tol = model.encoder_states(src), model.keep(src), _layer_tol(candidate)
    for layer in range(config.N):
        w = sub_weights(weights, f"encoder.{layer}.")
        got = candidate.encoder_layer(states[layer], w, config.h, config.eps, keep)
        if not agrees(got, states[layer + 1], tol):
            where = suspect_in_encoder_layer(candidate, states[layer], w, config.h, config.eps, keep)
            cause = _layer_cause("encoder_layer", got, lambda v, x=states[layer], w=w: oracle.encoder_layer(
                x, w, config.h, config.eps, keep, variant=v), tol)
            return f"first divergence: encoder.{layer} ({where}){cause}"
    return None


def decoder_divergence(candidate, config, weights, tgt_in, memory, src, model: oracle.OracleModel) -> str | None:
    """"first divergence: decoder.l (...)" or None when every decoder layer agrees on the oracle's inputs."""
    if not candidate.provides("decoder_layer"):
        return None
    states, tol = model.decoder_states(tgt_in, memory, src), _layer_tol(candidate)
    tgt_keep, src_keep = model.keep(tgt_in), model.keep(src)
    for layer in range(config.N):
        w = sub_weights(weights, f"decoder.{layer}.")
        got = candidate.decoder_layer(states[layer], memory, w, config.h, config.eps, tgt_keep, src_keep)
        if not agrees(got, states[layer + 1], tol):
            where = suspect_in_decoder_layer(candidate, states[layer], memory, w, config.h, config.eps, tgt_keep,
                                             src_keep)
            cause = _layer_cause("decoder_layer", got, lambda v, y=states[layer], w=w: oracle.decoder_layer(
                y, memory, w, config.h, config.eps, tgt_keep, src_keep, variant=v), tol)
            return f"first divergence: decoder.{layer} ({where}){cause}"
    return None


def explain_encode(candidate, config, weights, src, got=None) -> str:
    """Where ``encode`` goes wrong; ``got`` (the candidate's memory) lets it recognise a final LayerNorm."""
    model = oracle.OracleModel(config, weights)
    found = encoder_divergence(candidate, config, weights, src, model)
    if found:
        return found
    if not candidate.provides("encoder_layer"):
        return "(no encoder_layer part: layer-by-layer localisation unavailable)"
    after = None if got is None else after_last_layer(candidate, got, model.encode(src), model.keep(src), config.eps)
    return after or ("every encoder layer agrees with the oracle when fed the oracle's inputs and masks: the input"
                     " embedding (sqrt(d_model) E[token] + PE(pos), positions from 0, the shared table E), the"
                     " padding mask the model builds from pad_id, or a step after the last layer (a final"
                     " LayerNorm) suspected")


def after_last_layer(candidate, got, memory, keep, eps: float) -> str | None:
    """Recognise the lesson's "Common mistake" in a memory whose every layer is right: an extra LayerNorm
    after the stack (with its own gamma and beta, fitted here feature by feature) and/or the memory set
    to 0 at padded positions (torch's nested-tensor fast path)."""
    got, keep = np.asarray(got, np.float64), np.asarray(keep, bool)
    normed = np_formulas.layer_norm(memory, 1.0, 0.0, eps)[keep]  # (rows, d): real positions only
    if normed.shape[0] < 3:
        return None
    design = np.stack([normed, np.ones_like(normed)], axis=-1)  # per feature j: got = g_j * normed + b_j
    fitted = np.stack([design[:, j] @ np.linalg.lstsq(design[:, j], got[keep][:, j], rcond=None)[0]
                       for j in range(normed.shape[1])], axis=-1)
    causes = []
    if agrees(fitted, got[keep], for_dtype(MODEL, candidate.conventions.dtype)):
        causes.append("an extra LayerNorm after the last layer (torch.nn.Transformer's default final norm,"
                      " which the paper's post-norm model does not have)")
    if (~keep).any() and not np.any(got[~keep]) and np.any(memory[~keep]):
        causes.append("the memory is 0 at padded positions (torch.nn.Transformer's nested-tensor fast path)")
    if not causes:
        return None
    return "every encoder layer agrees with the oracle; likely cause: " + "; and ".join(causes)


def explain_decode(candidate, config, weights, tgt_in, memory, src) -> str:
    model = oracle.OracleModel(config, weights)
    found = decoder_divergence(candidate, config, weights, tgt_in, memory, src, model)
    if found:
        return found
    if not candidate.provides("decoder_layer"):
        return "(no decoder_layer part: layer-by-layer localisation unavailable)"
    return ("every decoder layer agrees with the oracle when fed the oracle's inputs and masks: the target"
            " embedding, the output projection (logits = y E^T, tied to the embedding, no bias), the"
            " padding masks the model builds from pad_id, or a step after the last layer (a final LayerNorm)"
            " suspected")


def explain_forward(candidate, cmodel, config, weights, src, tgt_in) -> str:
    """Encoder first (through ``model.encode`` when provided, else layer by layer), then the decoder."""
    model = oracle.OracleModel(config, weights)
    memory = model.encode(src)
    if candidate.provides("model.encode"):
        got = cmodel.encode(src)
        if not agrees(got, memory, for_dtype(MODEL, candidate.conventions.dtype)):
            return "the memory (model.encode) already differs; " + explain_encode(candidate, config, weights, src, got)
    else:
        found = encoder_divergence(candidate, config, weights, src, model)
        if found:
            return found
    return explain_decode(candidate, config, weights, tgt_in, memory, src)


def close_logits(check, candidate, model, config, weights, src, tgt_in, expected, tol: Tolerance, *, what: str,
                 structure: Callable[[], str | None] | None = None):
    """``model.forward(src, tgt_in)`` (the candidate's, ``weights`` loaded) against ``expected``; on failure
    the known variant it matches, the first layer that diverges, and the mutants that give the same logits."""
    __tracebackhide__ = True
    return close(
        check, model.forward(src, tgt_in), expected, tol, what=what,
        alternatives=lambda: variant_outputs(
            "model", lambda v: oracle.OracleModel(config, weights, variant=v).forward(src, tgt_in)),
        explain=lambda: explain_forward(candidate, model, config, weights, src, tgt_in),
        structure=structure,
        rerun=lambda other: loaded_model(other, config, weights).forward(src, tgt_in),
    )
