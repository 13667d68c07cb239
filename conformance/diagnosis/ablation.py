"""Where a model that exposes no layers goes wrong: switch its sublayers off through ``load_weights``.

A sublayer whose output projection is zero (W_O and b_O of an attention, W2 and b2 of a feed-forward)
adds nothing to the residual stream, in the candidate as in the oracle, whatever the implementation:
so the suite can compare the model with chosen sublayers switched on, and say which one differs.

1. Every sublayer off: what is left is the embedding (table, sqrt(d_model), positions), the
   LayerNorms and the output projection. When this differs, the candidate's output is held against the
   shapes real code takes (no norm on the residual path, a norm after the stack, an unscaled embedding,
   no residual connection, a constant factor on the logits), then against one position alone (the
   positional encoding beyond position 0). When it agrees, near-constant embeddings test the LayerNorm
   epsilon, which ordinary rows cannot see.
2. One sublayer kind on (self-attention, cross-attention, feed-forward), the rest off: a kind that
   differs where every-sublayer-off agrees is suspected; then each layer alone says where.

The candidate's model is built afresh (the check's own model keeps its weights) and called through
``CandidateModel``, so its conventions (dtype, mask polarity, sequence-first) are the suite's usual ones.
Naming the bug is the catalogue's job (``matching``); this module says where, for ``model``-only adapters.
"""

from __future__ import annotations

import functools

import numpy as np

from conformance.diagnosis import structure
from conformance.diagnosis.matching import agrees
from conformance.diagnosis.message import RANDOM_AT_EVALUATION, fmt_layers
from conformance.errors import ConformanceOutcome
from conformance.paper import formulas
from conformance.problems import oracle
from conformance.tolerances import MODEL, for_dtype

HEAD = "model-only localisation (sublayers switched off through load_weights): "

# A sublayer kind: the stack, the sublayer's weight prefix and the weights that carry its output.
SWITCHES = {
    "encoder self-attention": ("encoder", "self_attn", ("W_O", "b_O")),
    "encoder feed-forward": ("encoder", "ffn", ("W2", "b2")),
    "decoder self-attention": ("decoder", "self_attn", ("W_O", "b_O")),
    "decoder cross-attention": ("decoder", "cross_attn", ("W_O", "b_O")),
    "decoder feed-forward": ("decoder", "ffn", ("W2", "b2")),
}
# Each method's stages: (switches on, the stage it is judged against). The encoder reaches forward's
# logits only through the cross-attention, so forward judges the encoder's kinds with it switched on.
STAGES = {
    "encode": [({"encoder self-attention"}, set()), ({"encoder feed-forward"}, set())],
    "decode": [({"decoder self-attention"}, set()), ({"decoder cross-attention"}, set()),
               ({"decoder feed-forward"}, set())],
    "forward": [({"decoder self-attention"}, set()), ({"decoder feed-forward"}, set()),
                ({"decoder cross-attention"}, set()),
                ({"decoder cross-attention", "encoder self-attention"}, {"decoder cross-attention"}),
                ({"decoder cross-attention", "encoder feed-forward"}, {"decoder cross-attention"})],
}


class AblationFailed(Exception):
    """The candidate's model could not be built, loaded or run on switched-off weights; the message says why."""


def output_layer(name: str, kind: str) -> int | None:
    """The layer whose ``kind`` sublayer ``name`` carries the output of (``decoder.1.cross_attn.W_O``), else None."""
    stack, sub, names = SWITCHES[kind]
    parts = name.split(".")
    if len(parts) == 4 and parts[0] == stack and parts[2] == sub and parts[3] in names:
        return int(parts[1])
    return None


def switched(weights: dict, on: set[str], *, layer: int | None = None) -> dict:
    """``weights`` with every sublayer kind not in ``on`` switched off (its output projection zero); with
    ``layer``, the kinds in ``on`` stay on in that layer only."""
    out = dict(weights)
    for kind in SWITCHES:
        for name in weights:
            found = output_layer(name, kind)
            if found is not None and not (kind in on and layer in (None, found)):
                out[name] = np.zeros_like(weights[name])
    return out


class Probe:
    """One method of a fresh model of the candidate and of the oracle, on the same problem, any weights."""

    def __init__(self, candidate, method: str, config, src, tgt_in=None, memory=None):
        self.method, self.config = method, config
        self.src, self.tgt_in, self.memory = np.asarray(src), tgt_in, memory
        self.model = candidate.build_model(config, seed=0)  # its own: the check's model keeps its weights
        self.tol = for_dtype(MODEL, candidate.conventions.dtype)

    def answers(self, weights: dict, *, length: int | None = None):
        """(candidate's answer, oracle's answer, oracle model) for ``weights``; ``length`` cuts the sequence
        the answer runs along (the source for encode, the target otherwise)."""
        src, tgt_in = self._inputs(length)
        want = oracle.OracleModel(self.config, weights)
        return self.candidate_answer(weights, length=length), self._call(want, src, tgt_in), want

    def candidate_answer(self, weights: dict, *, length: int | None = None) -> np.ndarray:
        self.model.load_weights(weights)
        return self._call(self.model, *self._inputs(length))

    def _inputs(self, length: int | None):
        if length is None:
            return self.src, self.tgt_in
        if self.method == "encode":
            return self.src[:, :length], self.tgt_in
        return self.src, self.tgt_in[:, :length]

    def _call(self, model, src, tgt_in):
        """The method on the candidate's model or the oracle's: both take the suite's conventions."""
        if self.method == "encode":
            return model.encode(src)
        if self.method == "decode":
            return model.decode(tgt_in, self.memory, src)
        return model.forward(src, tgt_in)

    def agrees(self, weights: dict, **kw) -> bool:
        got, want, _ = self.answers(weights, **kw)
        return agrees(got, want, self.tol)

    def deterministic(self, weights: dict) -> bool:
        """The candidate gives the same answer twice (to its own rounding): else no comparison means much."""
        return agrees(self.candidate_answer(weights), self.candidate_answer(weights), self.tol)

    def real(self, oracle_model) -> np.ndarray:
        """(B, L) True at the positions that are tokens, not padding, along the answer's sequence."""
        return oracle_model.keep(self.src if self.method == "encode" else self.tgt_in)

    def states(self, oracle_model) -> list[np.ndarray]:
        """The oracle's input to each layer of the stack the answer comes from, and its output."""
        if self.method == "encode":
            return oracle_model.encoder_states(self.src)
        memory = self.memory if self.memory is not None else oracle_model.encode(self.src)
        return oracle_model.decoder_states(self.tgt_in, memory, self.src)

    def output(self, oracle_model, y) -> np.ndarray:
        """A stack's output as the method returns it: the memory itself, or logits through the output matrix."""
        return np.asarray(y, np.float64) if self.method == "encode" else oracle_model.logits_from_states(y)


# --------------------------------------------------------------------------------------------------
# Every sublayer off
# --------------------------------------------------------------------------------------------------


def everything_off(probe: Probe, weights: dict) -> str | None:
    """None when the model with every sublayer off agrees; else what differs there, as precisely as known."""
    off = switched(weights, set())
    got, want, model = probe.answers(off)
    if agrees(got, want, probe.tol):
        return None
    shape = known_shape(probe, off, got, want, model)
    if shape:
        return f"with every sublayer off {shape}"
    projection = unapplied_projection(probe, weights)
    if projection:
        return projection
    if probe.agrees(off, length=1):
        return ("with every sublayer off it agrees at one position and differs at several: the positional"
                " encoding (beyond position 0) suspected")
    if epsilon_dominates(probe, off):
        return (f"with every sublayer off it differs slightly on ordinary embeddings and far more on nearly"
                f" constant ones: the LayerNorm epsilon (the config's is {probe.config.eps:g}, inside the square"
                f" root) suspected")
    return ("with every sublayer off it differs: the embedding (table, sqrt(d_model), positions), the"
            " LayerNorms (placement, formula) or the output projection suspected")


def known_shape(probe: Probe, off: dict, got, want, model) -> str | None:
    """The shapes real code takes, recognised on the every-sublayer-off output at the real positions; a
    match says whether the padded positions differ besides."""
    got, want, real = np.asarray(got, np.float64), np.asarray(want, np.float64), probe.real(model)
    shape = _shape(probe, off, got, real, model)
    if shape is not None:
        return shape
    if agrees(got[real], probe.output(model, _last_beta(probe, off, want))[real], probe.tol):
        return ("the output is the last LayerNorm's beta at every position, whatever the token: no residual"
                " connection (LayerNorm(x + Sublayer(x)) without the x; on a batch of one, also a LayerNorm"
                " over the batch axis) suspected")
    factor = _constant_factor(got[real], want[real])
    if factor is not None:
        d = probe.config.d_model
        named = {d**-0.5: "d_model^-0.5", d**0.5: "sqrt(d_model)"}
        label = next((f" = {name}" for value, name in named.items() if abs(factor / value - 1) < 1e-3), "")
        return f"the output is the paper's times a constant {factor:.6g}{label}"
    return None


def _shape(probe: Probe, off: dict, got: np.ndarray, real: np.ndarray, model) -> str | None:
    """The first shape ``got`` takes at the ``real`` positions, cheapest first, with its padding note: the
    embedding itself, the embedding or the paper's output normalised once more (``structure``'s detector of an
    extra LayerNorm, in the words of its catalogue entry), the paper's with an unscaled embedding."""
    states, eps = probe.states(model), probe.config.eps
    embedded, last = states[0], states[-1]
    as_is = probe.output(model, embedded)
    if agrees(got[real], as_is[real], probe.tol):
        return ("the output is the embedding itself: no LayerNorm on the residual path (pre-norm, the norm inside"
                " each sublayer, without a final norm) suspected") + _padding_note(probe, got, as_is, real)
    output = functools.partial(probe.output, model)
    for before, said in ((embedded, "sublayers_off_pre_norm"), (last, "sublayers_off")):
        if structure.normalised_once_more(got, before, real, probe.tol, eps=eps, to_output=output):
            return structure.extra_norm_said(said) + _padding_note(
                probe, got, structure.with_extra_norm(before, eps, output), real)
    unscaled = probe.output(model, probe.states(oracle.OracleModel(probe.config, _unscaled_tables(
        off, probe.config.d_model)))[-1])
    if agrees(got[real], unscaled[real], probe.tol):
        return ("the output is the paper's with E[token] not multiplied by sqrt(d_model): the embedding scale"
                " (§3.4) suspected") + _padding_note(probe, got, unscaled, real)
    return None


# The same switch from the input side: V = 0 makes an attention's heads 0, W1 = b1 = 0 makes ReLU's 0;
# with b_O (b2) zero too the sublayer adds nothing, whether or not its W_O (W2) is applied.
INPUT_SIDE = {"self_attn": ("W_V", "b_V", "b_O"), "cross_attn": ("W_V", "b_V", "b_O"), "ffn": ("W1", "b1", "b2")}


def off_from_input_side(weights: dict, subs: tuple[str, ...]) -> dict:
    """Every sublayer off; those in ``subs`` through their input side, their W_O / W2 left as loaded."""
    out = switched(weights, set())
    for name, value in weights.items():
        parts = name.split(".")
        if len(parts) == 4 and parts[2] in subs:
            out[name] = np.zeros_like(value) if parts[3] in INPUT_SIDE[parts[2]] else value
    return out


def unapplied_projection(probe: Probe, weights: dict) -> str | None:
    """A line when switching a kind off through its input side agrees where zeroing its W_O / W2 did not:
    the candidate does not apply that matrix as loaded (never multiplies by it, or maps it to another name)."""
    for subs, matrix in ((("self_attn", "cross_attn"), "the attentions' output projection W_O"),
                         (("ffn",), "the feed-forward's second matrix W2")):
        if probe.agrees(off_from_input_side(weights, subs)):
            return (f"with every sublayer off it differs, yet agrees when the sublayers are switched off from"
                    f" their input side: {matrix} is not applied as loaded (not multiplied, or loaded under"
                    f" another name) suspected")
    return None


def _unscaled_tables(weights: dict, d_model: int) -> dict:
    """The embedding tables divided by sqrt(d_model): the oracle's sqrt(d_model) E[token] is then E[token].
    (The tied output projection is taken from the original model, so only the embedding changes.)"""
    return {name: value / np.sqrt(d_model) if name in ("E", "E_src", "E_tgt") else value
            for name, value in weights.items()}


def _padding_note(probe: Probe, got, expected, real) -> str:
    if real.all() or agrees(got, expected, probe.tol):
        return ""
    if not np.any(got[~real]):
        return ("; besides, the padded positions are exactly 0 (a fast path that pads its result with zeros,"
                " e.g. nn.TransformerEncoder's nested tensors)")
    return "; besides, the padded positions differ"


def _last_beta(probe: Probe, off: dict, want) -> np.ndarray:
    """Every position equal to the beta of the stack's last LayerNorm: with every sublayer off and no
    residual, each norm sees the zero vector, and LayerNorm(0) = beta."""
    stack, norm = ("encoder", "norm2") if probe.method == "encode" else ("decoder", "norm3")
    beta = np.asarray(off[f"{stack}.{probe.config.N - 1}.{norm}.beta"], np.float64)
    length = (probe.src if probe.method == "encode" else probe.tgt_in).shape
    return np.broadcast_to(beta, (*length, beta.shape[0]))


def _constant_factor(got: np.ndarray, want: np.ndarray) -> float | None:
    """c when got == c x want (c != 1) to float32 rounding, else None."""
    if got.shape != want.shape or not np.isfinite(got).all():
        return None
    scale = float((got * want).sum() / max((want * want).sum(), 1e-300))
    if abs(scale - 1) < 1e-3 or scale == 0:
        return None
    return scale if np.allclose(got, scale * want, rtol=1e-4, atol=1e-5 * abs(scale)) else None


def layer_norm_epsilon(probe: Probe, weights: dict) -> str | None:
    """With every sublayer off and nearly constant embeddings, where sqrt(variance + eps) is mostly eps: a
    line when the candidate differs there (its epsilon, or where it adds it), else None."""
    if probe.agrees(near_constant(switched(weights, set()), probe.config), length=1):
        return None
    return (f"with every sublayer off it agrees on ordinary embeddings and differs on nearly constant ones: the"
            f" LayerNorm epsilon (the config's is {probe.config.eps:g}, inside the square root) suspected")


def epsilon_dominates(probe: Probe, off: dict) -> bool:
    """The difference at one position grows a hundredfold where the embedding's variance is ~1e-8: only
    the epsilon weighs there (in float64 an epsilon outside the root already shows on ordinary rows)."""
    def worst(weights):
        got, want, _ = probe.answers(weights, length=1)
        return float(np.abs(np.asarray(got, np.float64) - np.asarray(want, np.float64)).max())
    ordinary, flat = worst(off), worst(near_constant(off, probe.config))
    return np.isfinite(flat) and flat > 100 * ordinary


def near_constant(weights: dict, config) -> dict:
    """Embedding rows that make sqrt(d_model) E[token] + PE(0) nearly constant (variance ~1e-8): LayerNorm
    then divides by sqrt(1e-8 + eps), where eps 1e-5 and 1e-12, or eps outside the root, differ many-fold."""
    out = dict(weights)
    rng = np.random.default_rng(1)
    pe0 = formulas.positional_encoding(1, config.d_model)[0]
    for name in ("E", "E_src", "E_tgt"):
        if name in out:
            rows = 0.5 + 1e-4 * rng.standard_normal(out[name].shape) - pe0
            out[name] = (rows / np.sqrt(config.d_model)).astype(out[name].dtype)
    return out


# --------------------------------------------------------------------------------------------------
# One sublayer kind on
# --------------------------------------------------------------------------------------------------


def suspects(probe: Probe, weights: dict) -> list[str]:
    """Each sublayer kind that differs where its base stage agrees, with the layers where it does."""
    found = []
    for on, base in STAGES[probe.method]:
        if base and not probe.agrees(switched(weights, base)):
            continue  # the stage it would be judged against differs already: nothing to say about it
        if probe.agrees(switched(weights, on)):
            continue
        kind = next(iter(on - base))
        layers = [layer for layer in range(probe.config.N)
                  if not probe.agrees(_one_layer(weights, on, kind, layer))]
        found.append(f"{kind} ({_layers(SWITCHES[kind][0], layers, probe.config.N)})")
    return found


def _one_layer(weights: dict, on: set, kind: str, layer: int) -> dict:
    """``on`` everywhere but ``kind``, which is on in ``layer`` only."""
    stage, single = switched(weights, on), switched(weights, {kind}, layer=layer)
    return {name: single[name] if output_layer(name, kind) is not None else value for name, value in stage.items()}


def _layers(stack: str, layers: list[int], n: int) -> str:
    if not layers:
        return "no layer alone: only together"
    if len(layers) == n and n > 1:
        return f"every layer, {stack}.0-{n - 1}"
    return fmt_layers(stack, layers)


# --------------------------------------------------------------------------------------------------
# The line
# --------------------------------------------------------------------------------------------------


def ablate(candidate, method: str, config, weights: dict, src, tgt_in=None, memory=None) -> str:
    """One line: what switching sublayers off through ``load_weights`` shows about ``method``
    ("encode", "decode" or "forward"). Raises only ``AblationFailed``, saying why it could not run."""
    try:
        return HEAD + findings(Probe(candidate, method, config, src, tgt_in, memory), weights)
    except ConformanceOutcome as exc:  # the candidate's model raised, hung or returned the wrong thing
        raise AblationFailed(exc.message.splitlines()[0]) from exc
    except Exception as exc:  # noqa: BLE001 - a diagnosis must never replace the failure it explains
        raise AblationFailed(f"{type(exc).__name__}: {exc}") from exc


def findings(probe: Probe, weights: dict) -> str:
    """The stages in order; the first that explains the difference ends the line."""
    if not probe.deterministic(weights):
        return f"{RANDOM_AT_EVALUATION} (no sublayer can be compared while the outputs vary)"
    if probe.agrees(weights):  # still worth the epsilon's probe: ordinary inputs cannot show it
        return layer_norm_epsilon(probe, weights) or ("on these weights and inputs the model agrees with the"
                                                      " oracle: nothing to localise")
    first = everything_off(probe, weights)
    if first is not None:
        return first + " (the sublayers cannot be judged alone while this differs)"
    kinds = suspects(probe, weights)
    if kinds:
        unjudged = ("; the encoder's sublayers not judged (forward sees them only through the cross-attention,"
                    " which differs)" if probe.method == "forward" and any("cross" in k for k in kinds) else "")
        return "with every sublayer off it agrees; differs with only the " + "; and with only the ".join(kinds) \
            + unjudged
    eps = layer_norm_epsilon(probe, weights)
    if eps is not None:
        return eps
    return ("with every sublayer off it agrees, and with each sublayer kind on alone: the sublayers'"
            " interplay (residual connections, norm placement between them) suspected")
