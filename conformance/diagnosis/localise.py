"""Where a composite goes wrong: the first layer, and the sublayer, that diverges on the oracle's own inputs.

When ``encode``, ``decode`` or ``forward`` disagrees with the oracle, the candidate's own
``encoder_layer`` / ``decoder_layer`` are rerun on the oracle's input to each layer, then its
``multi_head_attention`` / ``feed_forward`` on the oracle's input to each sublayer, so the message says
where the bug sits ("first divergence: decoder.1 (cross-attention sublayer suspected)"). A candidate
without those layer parts but with a model that loads weights is localised by ablation instead: its
sublayers switched off in turn through ``load_weights`` (``ablation``). Naming *which* bug is the
catalogue's job (``matching``); this module only says where.
"""

from __future__ import annotations

import numpy as np

from conformance import oracle
from conformance.diagnosis import composite
from conformance.diagnosis.ablation import AblationFailed, ablate
from conformance.diagnosis.matching import agrees
from conformance.scenarios import key_padding
from conformance.tolerances import LAYER, MODEL, Tolerance, for_dtype
from conformance.weights import sub_weights


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
    found = composite.suspect_in_encoder(candidate, x, w, h, eps, keep, want, tol)
    return found or _wiring(candidate, "the padding mask")


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
    found = composite.suspect_in_decoder(candidate, y, memory, w, h, eps, src_keep, want, tol)
    return found or _wiring(candidate, "the causal mask, the padding masks of the self- and the cross-attention,"
                                       " which states feed the cross-attention")


def _wiring(candidate, extra: str) -> str:
    if not (composite.testable(candidate, "multi_head_attention") and composite.testable(candidate, "feed_forward")):
        return "no multi_head_attention and feed_forward parts to test its sublayers alone"
    return (f"its sublayers agree with the oracle on their own, so the layer's wiring is suspected"
            f" (residual connections, LayerNorm placement, {extra})")


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
            return f"first divergence: encoder.{layer} ({where})"
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
            return f"first divergence: decoder.{layer} ({where})"
    return None


def locate_encode(candidate, config, weights, src) -> str:
    """Where ``encode`` goes wrong, layer by layer."""
    model = oracle.OracleModel(config, weights)
    found = encoder_divergence(candidate, config, weights, src, model)
    if found:
        return found
    if not candidate.provides("encoder_layer"):
        return model_only(candidate, "encode", "encoder_layer", config, weights, src)
    return ("every encoder layer agrees with the oracle when fed the oracle's inputs and masks: the input"
            " embedding (sqrt(d_model) E[token] + PE(pos), positions from 0, the shared table E), the padding mask"
            " the model builds from pad_id, or a step after the last layer (a final LayerNorm) suspected")


def locate_decode(candidate, config, weights, tgt_in, memory, src) -> str:
    model = oracle.OracleModel(config, weights)
    found = decoder_divergence(candidate, config, weights, tgt_in, memory, src, model)
    if found:
        return found
    if not candidate.provides("decoder_layer"):
        return model_only(candidate, "decode", "decoder_layer", config, weights, src, tgt_in, memory)
    return ("every decoder layer agrees with the oracle when fed the oracle's inputs and masks: the target"
            " embedding, the output projection (logits = y E^T, tied to the embedding, no bias), the padding"
            " masks the model builds from pad_id, or a step after the last layer (a final LayerNorm) suspected")


def locate_forward(candidate, cmodel, config, weights, src, tgt_in) -> str:
    """Encoder first (through ``model.encode`` when provided, else layer by layer), then the decoder."""
    model = oracle.OracleModel(config, weights)
    memory = model.encode(src)
    if candidate.provides("model.encode"):
        if not agrees(cmodel.encode(src), memory, for_dtype(MODEL, candidate.conventions.dtype)):
            return "the memory (model.encode) already differs; " + locate_encode(candidate, config, weights, src)
    else:
        found = encoder_divergence(candidate, config, weights, src, model)
        if found:
            return found
    if not candidate.provides("decoder_layer"):  # forward itself: a model-only adapter may have no decode
        return model_only(candidate, "forward", "decoder_layer", config, weights, src, tgt_in)
    return locate_decode(candidate, config, weights, tgt_in, memory, src)


def model_only(candidate, method: str, layer_part: str, config, weights, src, tgt_in=None, memory=None) -> str:
    """Without the ``layer_part`` to rerun, the model's ``method`` with its sublayers switched off in turn
    through ``load_weights`` (``ablation``); the reason when that cannot run either."""
    unavailable = f"no {layer_part} part: layer-by-layer localisation unavailable"
    needed = ("build_model", "model.load_weights", f"model.{method}")
    if not all(candidate.provides(part) for part in needed):
        return f"({unavailable})"
    try:
        return ablate(candidate, method, config, weights, src, tgt_in, memory)
    except AblationFailed as exc:
        return f"({unavailable}; ablation through load_weights could not run: {exc})"
