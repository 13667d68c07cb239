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

from conformance.config import ModelConfig

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
    read_through_cross_attention: bool = False
    zero_sum: bool = False
    control: bool = False  # a dense place of the paper's that the check of the other places asks too
    source_length: int = 1  # 2 for an attention's inside read on two equal keys (a mask shared by heads shows)
    unstudied: str = ""  # why the configuration leaves this place out (the report says so)


def distinct(losses: list[float], rel: float = SAME_LOSS) -> int:
    """How many values ``losses`` take, two being one when they agree to ``rel``."""
    values = sorted(losses)
    count = 1 if values else 0
    for before, after in zip(values, values[1:]):
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
                     only(stack, layer, sublayer, one_column=not paper), through, zero_sum=first,
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
        Probe("the sum of the source's embeddings and positions", True, THROUGH_READER, source, True),
        Probe("the sum of the target's embeddings and positions", True, DENSE, nothing, control=True),
        *[probe(*where, paper=True) for where in studied],
        Probe("on a residual sum, a LayerNorm's output or the logits", False, 1, erased),
        Probe("on an embedding or a positional encoding before their sum", False, 1, nothing, zero_sum=True),
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
