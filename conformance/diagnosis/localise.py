"""Where a composite goes wrong: every layer, and the sublayer, that diverges on the oracle's own inputs.

When ``encode``, ``decode`` or ``forward`` disagrees with the oracle, the candidate's own
``encoder_layer`` / ``decoder_layer`` are rerun on the oracle's input to each layer, then its
``multi_head_attention`` / ``feed_forward`` on the oracle's input to each sublayer, so the message says
where the bugs sit ("first divergence: decoder.1 (cross-attention sublayer suspected)"; "first divergence:
encoder.0 (...); the same in encoder.1-5 (every layer)" when the bug is in every layer). Real code often
deviates in several places at once (pre-norm layers and a final LayerNorm after the stack), so every layer
is judged, and then the step after the stack: the candidate's own layers chained from the oracle's
embedding, held against the model's answer with and without a plain LayerNorm after the last layer.
A candidate without those layer parts but with a model that loads weights is localised by ablation
instead: its sublayers switched off in turn through ``load_weights`` (``ablation``). Naming *which* bug is
the catalogue's job (``matching``); this module only says where.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from conformance.diagnosis import composite, structure
from conformance.diagnosis.ablation import AblationFailed, ablate
from conformance.diagnosis.matching import agrees
from conformance.diagnosis.message import Clause, Location, fmt_layers
from conformance.problems import oracle
from conformance.problems.scenarios import LOADED_MODEL, key_padding, loaded_model
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


@dataclass
class Stack:
    """One stack of the candidate held against the oracle's: the oracle's input to each layer (and the
    stack's output last), the candidate's own layer l on any input, and what suspect_in_*_layer says of it."""

    name: str  # "encoder" or "decoder"
    states: list[np.ndarray]
    run: Callable[[int, np.ndarray], np.ndarray]
    suspect: Callable[[int, np.ndarray], str]
    real: np.ndarray  # (B, L) True at the positions that are tokens
    to_output: Callable[[np.ndarray], np.ndarray]  # the stack's output as the method returns it

    @property
    def last(self) -> str:
        return f"{self.name}.{len(self.states) - 2}"


def encoder_stack(candidate, config, weights, src, model: oracle.OracleModel) -> Stack:
    keep = model.keep(src)

    def run(layer, x):
        return candidate.encoder_layer(x, sub_weights(weights, f"encoder.{layer}."), config.h, config.eps, keep)

    def suspect(layer, x):
        return suspect_in_encoder_layer(candidate, x, sub_weights(weights, f"encoder.{layer}."), config.h,
                                        config.eps, keep)

    return Stack("encoder", model.encoder_states(src), run, suspect, keep, lambda y: np.asarray(y, np.float64))


def decoder_stack(candidate, config, weights, tgt_in, memory, src, model: oracle.OracleModel) -> Stack:
    tgt_keep, src_keep = model.keep(tgt_in), model.keep(src)

    def run(layer, y):
        return candidate.decoder_layer(y, memory, sub_weights(weights, f"decoder.{layer}."), config.h, config.eps,
                                       tgt_keep, src_keep)

    def suspect(layer, y):
        return suspect_in_decoder_layer(candidate, y, memory, sub_weights(weights, f"decoder.{layer}."), config.h,
                                        config.eps, tgt_keep, src_keep)

    return Stack("decoder", model.decoder_states(tgt_in, memory, src), run, suspect, tgt_keep,
                 model.logits_from_states)


def divergent_layers(stack: Stack, tol: Tolerance) -> list[tuple[int, str]]:
    """(layer, suspect) for every layer that disagrees on the oracle's input to it: each layer is judged on
    its own, so a bug in every layer and another in one are all found, not only the first."""
    found = []
    for layer in range(len(stack.states) - 1):
        if not agrees(stack.run(layer, stack.states[layer]), stack.states[layer + 1], tol):
            found.append((layer, stack.suspect(layer, stack.states[layer])))
    return found


def fmt_divergence(stack: str, found: list[tuple[int, str]], n_layers: int) -> str:
    """"first divergence: encoder.0 (X); the same in encoder.1-5 (every layer); also encoder.3 (Y)": the
    layers grouped by suspect, in the order each suspect first shows. The first layer's text stays the
    prefix it always was, so a line that names one layer reads as before."""
    groups: dict[str, list[int]] = {}
    for layer, where in found:
        groups.setdefault(where, []).append(layer)
    (where, layers), *others = groups.items()
    text = f"first divergence: {stack}.{layers[0]} ({where})"
    if len(layers) > 1:
        every = " (every layer)" if len(layers) == n_layers else ""
        text += f"; the same in {fmt_layers(stack, layers[1:])}{every}"
    return text + "".join(f"; also {fmt_layers(stack, layers)} ({where})" for where, layers in others)


def chained(stack: Stack) -> np.ndarray:
    """The candidate's own layers one after the other from the oracle's embedding: what its model's stack
    gives when nothing but its layers runs between the embedding and the output."""
    x = stack.states[0]
    for layer in range(len(stack.states) - 1):
        x = stack.run(layer, x)
    return np.asarray(x, np.float64)


def extra_norm_after(stack: Stack, answer: np.ndarray | None, eps: float, tol: Tolerance) -> bool:
    """Is the model's ``answer`` its own layers chained, then one more LayerNorm (``structure.normalised_once_more``,
    gamma 1 and beta 0: the initial values of a norm whose weights have no canonical name)? Judged at the real
    positions only: a fast path may fill the padded ones (torch.nn's nested tensors)."""
    if answer is None:
        return False
    return structure.normalised_once_more(answer, chained(stack), stack.real, tol, eps=eps, to_output=stack.to_output)


def locate_stack(candidate, stack: Stack, answer, config, agreed: str) -> str:
    """Every divergent layer, then an extra LayerNorm after the last one when the model's ``answer`` shows
    it (a ``Location`` of the two parts); ``agreed`` when every layer agrees and nothing is found after them."""
    found = divergent_layers(stack, _layer_tol(candidate))
    model_tol = for_dtype(MODEL, candidate.conventions.dtype)
    extra = _or_none(lambda: extra_norm_after(stack, _or_none(answer), config.eps, model_tol))
    if found:
        return Location(fmt_divergence(stack.name, found, config.N), _norm_after(stack, "suspected") if extra else None)
    if extra:
        return Location(f"every {stack.name} layer agrees with the oracle when fed the oracle's inputs and masks",
                        _norm_after(stack, "found"))
    return agreed


def _norm_after(stack: Stack, verdict: str) -> Clause:
    """The localisation's part after the stack, in the words of the catalogue entry it describes."""
    return Clause(structure.extra_norm_said("after_layers").format(last=stack.last, verdict=verdict),
                  structure.EXTRA_NORM)


def _or_none(fn: Callable):
    """The model's answer (or the chain of its layers), None when it cannot run: the layer-by-layer line
    then stands alone."""
    try:
        return fn()
    except Exception:  # noqa: BLE001 - a diagnosis must never replace the failure it explains
        return None


def model_answer(candidate, config, weights, method: str, *args) -> Callable[[], np.ndarray | None]:
    """A call of ``method`` on the candidate's model, built and loaded afresh (None without such a model)."""

    def answer():
        if not all(candidate.provides(part) for part in (*LOADED_MODEL, f"model.{method}")):
            return None
        return getattr(loaded_model(candidate, config, weights), method)(*args)

    return answer


def encoder_divergence(candidate, config, weights, src, model: oracle.OracleModel) -> str | None:
    """"first divergence: encoder.l (...)" and the other divergent layers, or None when every encoder layer
    agrees on the oracle's inputs."""
    if not candidate.provides("encoder_layer"):
        return None
    found = divergent_layers(encoder_stack(candidate, config, weights, src, model), _layer_tol(candidate))
    return fmt_divergence("encoder", found, config.N) if found else None


ENCODER_AGREES = (
    "every encoder layer agrees with the oracle when fed the oracle's inputs and masks: the input embedding"
    " (sqrt(d_model) E[token] + PE(pos), positions from 0, the shared table E), the padding mask the model"
    " builds from pad_id, or a step after the last layer (a final LayerNorm) suspected")
DECODER_AGREES = (
    "every decoder layer agrees with the oracle when fed the oracle's inputs and masks: the target embedding,"
    " the output projection (logits = y E^T, tied to the embedding, no bias), the padding masks the model"
    " builds from pad_id, or a step after the last layer (a final LayerNorm) suspected")


def locate_encode(candidate, config, weights, src, *, answer=None) -> str:
    """Where ``encode`` goes wrong, layer by layer, then after the stack; ``answer``: the model's memory
    (a fresh model's by default)."""
    if not candidate.provides("encoder_layer"):
        return model_only(candidate, "encode", "encoder_layer", config, weights, src)
    stack = encoder_stack(candidate, config, weights, src, oracle.OracleModel(config, weights))
    return locate_stack(candidate, stack, answer or model_answer(candidate, config, weights, "encode", src), config,
                        ENCODER_AGREES)


def locate_decode(candidate, config, weights, tgt_in, memory, src, *, answer=None) -> str:
    """Where ``decode`` goes wrong, layer by layer, then after the stack; ``answer``: the model's logits
    (a fresh model's ``decode`` by default; ``forward``'s when called from there)."""
    if not candidate.provides("decoder_layer"):
        return model_only(candidate, "decode", "decoder_layer", config, weights, src, tgt_in, memory)
    stack = decoder_stack(candidate, config, weights, tgt_in, memory, src, oracle.OracleModel(config, weights))
    answer = answer or model_answer(candidate, config, weights, "decode", tgt_in, memory, src)
    return locate_stack(candidate, stack, answer, config, DECODER_AGREES)


def locate_forward(candidate, cmodel, config, weights, src, tgt_in) -> str:
    """Encoder first (through ``model.encode`` when provided, else layer by layer), then the decoder."""
    model = oracle.OracleModel(config, weights)
    memory = model.encode(src)
    if candidate.provides("model.encode"):
        if not agrees(cmodel.encode(src), memory, for_dtype(MODEL, candidate.conventions.dtype)):
            return _prefixed("the memory (model.encode) already differs; ", locate_encode(
                candidate, config, weights, src, answer=lambda: cmodel.encode(src)))
    else:
        found = encoder_divergence(candidate, config, weights, src, model)
        if found:
            return found
    if not candidate.provides("decoder_layer"):  # forward itself: a model-only adapter may have no decode
        return model_only(candidate, "forward", "decoder_layer", config, weights, src, tgt_in)
    return locate_decode(candidate, config, weights, tgt_in, memory, src, answer=lambda: cmodel.forward(src, tgt_in))


def _prefixed(prefix: str, line: str) -> str:
    """``prefix`` + ``line``, a ``Location`` kept one (its parts intact)."""
    return line.after(prefix) if isinstance(line, Location) else prefix + line


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
