"""§5.4, where dropout acts: read off training-mode losses at weights built so that one place alone can change them.

The paper: "We apply dropout to the output of each sub-layer, before it is added to the sub-layer input and
normalized. In addition, we apply dropout to the sums of the embeddings and the positional encodings in both the
encoder and decoder stacks." The protocol's one training-mode computation is ``train_step``'s loss, and the
framework's random generator is its own: so nothing here predicts a mask. Each probe sets the canonical weights so
that the paper's dropout can give the loss only a known number of values, then counts the values the loss takes over
repeated steps from the same weights and batch (one token each side: every attention reads one key, but below):

- a LayerNorm with gamma 0 outputs its beta whatever came before it: in the post-norm model (§3.1) it erases every
  random draw before it;
- a sublayer whose output projection is 0 (W_O and b_O, or W2 and b2) outputs exactly 0, and dropout of 0 is 0:
  the paper's dropout there changes nothing, and neither does any dropout inside that sublayer;
- the sublayer under study outputs a vector with one non-zero number (its projection keeps one column): the paper's
  dropout keeps or drops that number, two values at most, while a dropout inside it (on the attention weights of
  several heads, on the FFN's hidden units) makes that number itself take many values;
- or a dense vector: then the paper's dropout makes the loss take many values, and no dropout there leaves it one.

The encoder reaches the loss through the decoder's cross-attention, made a one-column *reader* (its own dropout:
one value more at most). A stack's first self-attention, with no LayerNorm before it, is studied on embedding sums of
exactly 0 (E[token] = -PE(0) / sqrt(d_model)), which also shows a dropout of the embedding or the encoding alone. The
inside of a cross-attention is studied on two equal keys (weights 1/2 each): a dropout of the weights whose mask the
heads share then changes their sum. A dropout on the queries, the keys or the scores alone, which one key or equal
keys cannot show, is not studied, nor a bias added after its sublayer's dropout. A model whose masks repeat after
every ``load_weights`` shows one value everywhere: the checks say so (blocked), never pass it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from conformance.config import ModelConfig, Recipe, toy_config
from conformance.errors import Blocked
from conformance.judging.training import letter_ids, loss_after_update
from conformance.weights import model_shapes, random_weights

# Steps per probe, and the probes' dropout rate (the places do not depend on it; a high one drops more per step): a
# dropout inside a one-column sublayer, on one head of four, changes its number in a quarter of the steps at 0.5, so 32
# steps miss it with a chance near 1e-4; a dense place the paper drops varies in nearly every step.
STEPS = 32
RATE = 0.5
# A dense place the paper drops gives at least this many values of 32 (elementwise: 27 to 32 measured at 0.1); a
# dropout of whole token vectors, or none, gives 2 or 1.
DENSE = 8
# Through the reader, which the paper's dropout itself keeps or drops (half the steps at 0.5): at least 5 values (a
# whole-vector dropout: 3 at most).
THROUGH_READER = 5
# Two losses are one value when they agree to this relative difference: the same masks give bitwise-equal losses on a
# deterministic framework; the paper's two values here differ by far more (the kept number moves a LayerNorm's input).
SAME_LOSS = 1e-6


@dataclass(frozen=True)
class Probe:
    """One place: ``paper`` whether §5.4 puts dropout there; the loss must take at least (paper) or at most (not)
    ``bound`` values over the steps; ``edit`` sets the weights. ``zero_sum``: it needs the embedding sums at position
    0 to be exactly 0 (E[token] = -PE(0) / sqrt(d_model)); ``read_through_cross_attention``: an encoder place, which
    the decoder's cross-attention carries to the loss."""

    place: str
    paper: bool
    bound: int
    edit: Callable[[dict, dict, ModelConfig], None]
    role: str = "sublayer"  # "sum" (the embeddings'), "sublayer", "stream" (after a residual sum), "summands"
    sublayer: str = ""  # the sublayer studied: self_attn, cross_attn, ffn
    read_through_cross_attention: bool = False
    zero_sum: bool = False
    control: bool = False  # a dense place of the paper's that the check of the other places asks too
    source_length: int = 1  # 2 for an attention's inside read on two equal keys (a mask shared by heads shows)
    unstudied: str = ""  # why the configuration leaves this place out (the report says so)


def distinct(losses: list[float], rel: float = SAME_LOSS) -> int:
    """How many values ``losses`` take, two being one when they agree to ``rel``."""
    values = sorted(losses)
    count = 1 if values else 0
    for before, after in zip(values, values[1:], strict=False):
        if after - before > rel * max(1.0, abs(after)):
            count += 1
    return count


# ------------------------------------------------------------------------------------------------------------------
# Weight edits, on canonical names
# ------------------------------------------------------------------------------------------------------------------

SUBLAYERS = {"encoder": ("self_attn", "ffn"), "decoder": ("self_attn", "cross_attn", "ffn")}
# The LayerNorm that follows each sublayer (post-norm): gamma 0 there erases the sublayer and everything before it.
NORM_AFTER = {("encoder", "self_attn"): "norm1", ("encoder", "ffn"): "norm2",
              ("decoder", "self_attn"): "norm1", ("decoder", "cross_attn"): "norm2", ("decoder", "ffn"): "norm3"}
WORDS = {"self_attn": "self-attention", "cross_attn": "cross-attention", "ffn": "feed-forward network"}
INSIDE = {"self_attn": "its attention weights", "cross_attn": "its attention weights", "ffn": "its hidden layer"}


def _projection(sublayer: str) -> tuple[str, str]:
    return ("W2", "b2") if sublayer == "ffn" else ("W_O", "b_O")


def silence_all(w: dict, config: ModelConfig) -> None:
    """Every sublayer outputs exactly 0."""
    for stack, sublayers in SUBLAYERS.items():
        for layer in range(config.N):
            for sublayer in sublayers:
                for leaf in _projection(sublayer):
                    name = f"{stack}.{layer}.{sublayer}.{leaf}"
                    if name in w:
                        w[name] = np.zeros_like(w[name])


def restore(w: dict, base: dict, stack: str, layer: int, sublayer: str, *, one_column: bool) -> None:
    """The sublayer outputs again: densely (its drawn projection), or in one number only (column 0 and its bias: a
    dropout of the whole vector the projection reads then leaves the bias, a third value)."""
    matrix, bias = (f"{stack}.{layer}.{sublayer}.{leaf}" for leaf in _projection(sublayer))
    w[matrix] = base[matrix].copy()
    if one_column:
        w[matrix][:, 1:] = 0.0
    if bias in w:
        w[bias] = base[bias].copy()
        if one_column:
            w[bias][1:] = 0.0


def erase_after(w: dict, stack: str, layer: int, sublayer: str) -> None:
    """gamma 0 in the LayerNorm after that sublayer: its output is its beta, whatever came before."""
    w[f"{stack}.{layer}.{NORM_AFTER[stack, sublayer]}.gamma"][:] = 0.0


def preceding(stack: str, layer: int, sublayer: str) -> tuple[str, int, str] | None:
    """The sublayer just before this one, whose LayerNorm erases everything earlier; None for a stack's first."""
    order = SUBLAYERS[stack]
    i = order.index(sublayer)
    return (stack, layer, order[i - 1]) if i else (stack, layer - 1, order[-1]) if layer else None


def reader(w: dict, base: dict) -> None:
    """The encoder reaches the loss through the first decoder layer's cross-attention alone, in one number: the
    target's side is erased before it, every other decoder sublayer is silent."""
    erase_after(w, "decoder", 0, "self_attn")
    restore(w, base, "decoder", 0, "cross_attn", one_column=True)


def zero_sums(w: dict, config: ModelConfig, tokens: dict[str, int]) -> None:
    """E[token] = -PE(0) / sqrt(d_model) for the source's and the target's token at position 0: their sums
    sqrt(d_model) E[token] + PE(0) are exactly 0 (PE(0) is 0, 1, 0, 1, ... in any implementation; sqrt(64) = 8 and the
    division by it are exact), and dropout of 0 is 0."""
    pe0 = np.tile(np.array([0.0, 1.0], dtype=np.float32), config.d_model // 2)
    row = (-pe0 / np.float32(np.sqrt(config.d_model))).astype(np.float32)
    for side, token in tokens.items():
        table = "E" if "E" in w else f"E_{side}"
        w[table][token] = row


def probes(config: ModelConfig) -> list[Probe]:
    """The places, first the paper's (dropout must act there), then the others (it must not): every sublayer of every
    layer, each alone. A stack's first self-attention has no LayerNorm before it: it is studied on embedding sums of
    exactly 0 (its output is then its biases' only: not studied where the attention has none)."""
    last = config.N - 1
    studied = [(stack, layer, sublayer) for stack in SUBLAYERS for layer in range(config.N)
               for sublayer in SUBLAYERS[stack]]

    def only(stack: str, layer: int, sublayer: str, *, one_column: bool):
        def edit(w, base, config):
            before = preceding(stack, layer, sublayer)
            if before is not None:
                erase_after(w, *before)
            restore(w, base, stack, layer, sublayer, one_column=one_column)
            if sublayer == "cross_attn":  # the memory it reads: fixed
                erase_after(w, "encoder", last, "ffn")
            if stack == "encoder":
                reader(w, base)
        return edit

    def probe(stack, layer, sublayer, *, paper: bool) -> Probe:
        through = stack == "encoder"
        bound = (THROUGH_READER if through else DENSE) if paper else 3 if through else 2
        where = f"the {stack}'s layer {layer + 1} {WORDS[sublayer]}"
        place = f"the output of {where}" if paper else (
            f"inside {where} (on {INSIDE[sublayer]}"
            + ("; or on the encoder's output it reads)" if sublayer == "cross_attn" else ")"))
        first = preceding(stack, layer, sublayer) is None
        # two equal keys: the cross-attention's (the memory, erased), an encoder self-attention's after the first
        # (erased too; its two positions and the reader's dropout: 4 values)
        two = not paper and (sublayer == "cross_attn" or (stack == "encoder" and sublayer == "self_attn" and not first))
        return Probe(place, paper, 4 if two and through else bound,
                     only(stack, layer, sublayer, one_column=not paper), sublayer=sublayer,
                     read_through_cross_attention=through, zero_sum=first,
                     control=paper and (stack, layer, sublayer) == ("decoder", last, "ffn"),
                     source_length=2 if two else 1,
                     unstudied="" if not first or config.attention_bias else
                     "not studied: a stack's first self-attention is read on a zero input, where a bias-free attention"
                     " outputs 0 whatever its dropout")

    def source(w, base, config):
        reader(w, base)

    def nothing(w, base, config):
        pass

    def erased(w, base, config):
        erase_after(w, "decoder", 0, "self_attn")

    return [
        Probe("the sum of the source's embeddings and positions", True, THROUGH_READER, source, "sum",
              read_through_cross_attention=True),
        Probe("the sum of the target's embeddings and positions", True, DENSE, nothing, "sum", control=True),
        *[probe(*where, paper=True) for where in studied],
        Probe("on a residual sum, a LayerNorm's output or the logits", False, 1, erased, "stream"),
        Probe("on an embedding or a positional encoding before their sum", False, 1, nothing, "summands",
              zero_sum=True),
        *[probe(*where, paper=False) for where in studied],
    ]


def weights_for(probe: Probe, base: dict, config: ModelConfig, tokens: dict[str, int]) -> dict:
    w = {name: value.copy() for name, value in base.items()}
    silence_all(w, config)
    if probe.zero_sum:
        zero_sums(w, config, tokens)
    probe.edit(w, base, config)
    return w


def erased_twin(w: dict) -> dict:
    """The zero-sum weights with the decoder's first LayerNorm erased too: the same logits (LayerNorm(0) and a gamma-0
    LayerNorm both give its beta) where the target's sum really is 0, other logits where it is not."""
    twin = {name: value.copy() for name, value in w.items()}
    erase_after(twin, "decoder", 0, "self_attn")
    return twin


# ------------------------------------------------------------------------------------------------------------------
# The measurement: the candidate trained step by step at each probe's weights
# ------------------------------------------------------------------------------------------------------------------


def measure(candidate, rng, seed: int, *, paper: bool) -> tuple[list[tuple[Probe, int]], dict]:
    """Each probe of the paper's places (``paper``) or of the others, and how many values the loss took over
    ``STEPS`` steps from the same weights and batch (one token each side), with the controls: how many
    values the paper's dense places gave (a model whose masks repeat from one ``load_weights`` to the next shows
    none), and the probes left out. Blocked where a LayerNorm with gamma 0 does not erase what came before it."""
    after = loss_after_update(candidate, seed)
    if after:
        raise Blocked(f"{after}. The probes count the values the loss of one batch takes before the update, where the"
                      " paper's dropout acts only at the place studied; after it, the loss carries what the update"
                      " learnt from every place's dropout")
    config = candidate.fit(toy_config(dropout=RATE, recipe=Recipe(warmup=400, dropout=RATE)))
    model = candidate.build_model(config, seed=seed)
    base = random_weights(model_shapes(config), rng)
    letters = letter_ids(config)
    src, tgt_in, tgt_out = (np.array([[token]], dtype=np.int64) for token in (letters[0], config.bos_id, letters[1]))
    tokens = {"src": int(letters[0]), "tgt": int(config.bos_id)}
    every = probes(config)
    quiet = weights_for(next(p for p in every if p.role == "stream"), base, config, tokens)
    model.load_weights(quiet)
    gap = float(np.abs(model.forward(src, tgt_in).astype(np.float64)
                       - model.forward(np.array([[letters[2]]]), np.array([[letters[3]]]))).max())
    if gap > 1e-6:
        raise Blocked(f"the dropout probes rest on post-norm (§3.1): a LayerNorm with gamma 0 outputs its beta and so"
                      f" erases everything before it. With gamma 0 in the decoder's first LayerNorm and every sublayer"
                      f" silenced, this model's logits still depend on the input (by up to {gap:.3g}): it is not"
                      " post-norm (see the layer checks)")
    left_out = {p.place: p.unstudied for p in every if p.unstudied}
    zero = next(p for p in every if p.role == "summands")
    weights = weights_for(zero, base, config, tokens)
    model.load_weights(weights)
    summed = model.forward(src, tgt_in).astype(np.float64)
    model.load_weights(erased_twin(weights))
    erased = model.forward(src, tgt_in).astype(np.float64)
    off = float(np.abs(summed - erased).max())
    if off > 1e-6 * max(1.0, float(np.abs(erased).max())):  # the same kernels either way: equal where the sum is 0
        left_out |= {p.place: f"not studied: it needs sqrt(d_model) E[token] + PE(0) = 0 at E[token] = -PE(0) /"
                              f" sqrt(d_model), and the logits there differ by {off:.3g} from those of a model whose"
                              " first LayerNorm erases the sum (embeddings not scaled by sqrt(d_model)?)"
                     for p in every if p.zero_sum}

    def count(probe: Probe) -> int:
        weights, losses = weights_for(probe, base, config, tokens), []
        source = np.repeat(src, probe.source_length, axis=1)
        for _ in range(STEPS):
            model.load_weights(weights)  # the step updates the weights: every step starts from the same ones
            losses.append(float(model.train_step(source, tgt_in, tgt_out)["loss"]))
        return distinct(losses)

    counted = [(p, count(p)) for p in every if p.paper == paper and p.place not in left_out]
    controls = counted if paper else [(p, count(p)) for p in every if p.control]
    if all(n <= 1 for _, n in controls):
        places = ", ".join(p.place for p, _ in controls)
        raise Blocked(f"the loss took one value at every place the paper drops ({places}), over {STEPS}"
                      f" steps from the same weights at dropout {RATE}: this model draws the same masks after"
                      " every load_weights (a training state that starts again with the weights, masks keyed on its"
                      " step?), and the probes need fresh ones")
    return counted, left_out


def shown(extra: list[tuple[Probe, int]]) -> list[tuple[Probe, int]]:
    """The places the extra values are said of, leaving out those another place's dropout explains: a dropout on the
    residual stream acts in every probe (it alone is said); a cross-attention's carries every encoder place to the
    loss; a dropout of a summand leaves the zero-sum places' sums non-zero."""
    if any(probe.role == "stream" for probe, _ in extra):
        return [(probe, n) for probe, n in extra if probe.role == "stream"]
    if any(probe.sublayer == "cross_attn" for probe, _ in extra):
        extra = [(probe, n) for probe, n in extra if not probe.read_through_cross_attention]
    if any(probe.role == "summands" for probe, _ in extra):
        extra = [(probe, n) for probe, n in extra if not probe.zero_sum or probe.role == "summands"]
    return extra
