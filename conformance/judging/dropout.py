"""§5.4, where dropout acts: read off training-mode losses at weights built so that one place alone can change them.

The paper: "We apply dropout to the output of each sub-layer, before it is added to the sub-layer input and
normalized. In addition, we apply dropout to the sums of the embeddings and the positional encodings in both the
encoder and decoder stacks." The protocol's one training-mode computation is ``train_step``'s loss, and the
framework's random generator is its own: so nothing here predicts a mask. Each probe sets the canonical weights so
that the paper's dropout can give the loss only a known number of values, then counts the values the loss takes over
repeated steps from the same weights and batch (one token each side, so every attention reads one key):

- a LayerNorm with gamma 0 outputs its beta whatever came before it: in the post-norm model (§3.1) it erases every
  random draw before it;
- a sublayer whose output projection is 0 (W_O and b_O, or W2 and b2) outputs exactly 0, and dropout of 0 is 0:
  the paper's dropout there changes nothing, and neither does any dropout inside that sublayer;
- the sublayer under study outputs a vector with one non-zero number (its projection keeps one column): the paper's
  dropout keeps or drops that number, two values at most, while a dropout inside it (on the attention weights of
  several heads, on the FFN's hidden units) makes that number itself take many values;
- or a dense vector: then the paper's dropout makes the loss take many values, and no dropout there leaves it one.

The encoder reaches the loss through the decoder's cross-attention, made a one-column *reader* (its own dropout:
two values more at most).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from conformance.config import ModelConfig

# Steps per probe. A probe whose place has dropout (rate 0.1) shows it in nearly every step when the place is a dense
# vector (0.9^64 that none of 64 numbers is dropped), and a dropout inside a one-column sublayer changes that number in
# a third of the steps (1 - 0.9^4 over four heads): 32 steps leave a chance below 1e-5 of missing either.
STEPS = 32
# Two losses are one value when they agree to this relative difference: the same masks give bitwise-equal losses on a
# deterministic framework; the paper's two values here differ by far more (the kept number moves a LayerNorm's input).
SAME_LOSS = 1e-6


@dataclass(frozen=True)
class Probe:
    """One place: ``paper`` whether §5.4 puts dropout there; the loss must take at least (paper) or at most (not)
    ``bound`` values over the steps; ``edit`` sets the weights."""

    place: str
    paper: bool
    bound: int
    edit: Callable[[dict, dict, ModelConfig], None]
    read_through_cross_attention: bool = False  # an encoder place: the decoder's cross-attention carries it


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
    """The sublayer outputs again: densely (its drawn projection), or in one number only (column 0, no bias)."""
    matrix, bias = (f"{stack}.{layer}.{sublayer}.{leaf}" for leaf in _projection(sublayer))
    w[matrix] = base[matrix].copy()
    if one_column:
        w[matrix][:, 1:] = 0.0
    elif bias in w:
        w[bias] = base[bias].copy()


def erase_after(w: dict, stack: str, layer: int, sublayer: str) -> None:
    """gamma 0 in the LayerNorm after that sublayer: its output is its beta, whatever came before."""
    w[f"{stack}.{layer}.{NORM_AFTER[stack, sublayer]}.gamma"][:] = 0.0


def preceding(stack: str, sublayer: str) -> tuple[str, int, str]:
    """The sublayer just before ``sublayer`` of the second layer: the LayerNorm after it erases everything earlier."""
    order = SUBLAYERS[stack]
    i = order.index(sublayer)
    return (stack, 1, order[i - 1]) if i else (stack, 0, order[-1])


def reader(w: dict, base: dict, config: ModelConfig) -> None:
    """The encoder reaches the loss through the first decoder layer's cross-attention alone, in one number: the
    target's side is erased before it, every other decoder sublayer is silent."""
    erase_after(w, "decoder", 0, "self_attn")
    restore(w, base, "decoder", 0, "cross_attn", one_column=True)


def probes(config: ModelConfig) -> list[Probe]:
    """The places, first the paper's (dropout must act there), then the others (it must not). Needs N >= 2: a
    sublayer of the second layer is studied with the first layer's last LayerNorm erasing what came before."""
    last = config.N - 1

    def only(stack: str, sublayer: str, *, one_column: bool, memory_fixed: bool = False):
        def edit(w, base, config):
            erase_after(w, *preceding(stack, sublayer))
            restore(w, base, stack, 1, sublayer, one_column=one_column)
            if memory_fixed:
                erase_after(w, "encoder", last, "ffn")
            if stack == "encoder":
                reader(w, base, config)
        return edit

    def embeddings(side: str):
        def edit(w, base, config):
            if side == "source":
                reader(w, base, config)
        return edit

    def nowhere(w, base, config):
        erase_after(w, "decoder", 0, "self_attn")

    return [
        Probe("the sum of the source's embeddings and positions", True, 4, embeddings("source"), True),
        Probe("the sum of the target's embeddings and positions", True, 2, embeddings("target")),
        Probe("the output of the encoder's self-attention", True, 4, only("encoder", "self_attn", one_column=False),
              True),
        Probe("the output of the encoder's feed-forward network", True, 4, only("encoder", "ffn", one_column=False),
              True),
        Probe("the output of the decoder's self-attention", True, 2, only("decoder", "self_attn", one_column=False)),
        Probe("the output of the decoder's cross-attention", True, 2,
              only("decoder", "cross_attn", one_column=False, memory_fixed=True)),
        Probe("the output of the decoder's feed-forward network", True, 2, only("decoder", "ffn", one_column=False)),
        Probe("on a residual sum, a LayerNorm's output or the logits", False, 1, nowhere),
        Probe("inside the decoder's self-attention (on its attention weights)", False, 2,
              only("decoder", "self_attn", one_column=True)),
        Probe("inside the decoder's cross-attention (on its attention weights)", False, 2,
              only("decoder", "cross_attn", one_column=True, memory_fixed=True)),
        Probe("inside the decoder's feed-forward network (on its hidden layer)", False, 2,
              only("decoder", "ffn", one_column=True)),
        Probe("inside the encoder's self-attention (on its attention weights)", False, 3,
              only("encoder", "self_attn", one_column=True), True),
        Probe("inside the encoder's feed-forward network (on its hidden layer)", False, 3,
              only("encoder", "ffn", one_column=True), True),
    ]


def weights_for(probe: Probe, base: dict, config: ModelConfig) -> dict:
    w = {name: value.copy() for name, value in base.items()}
    silence_all(w, config)
    probe.edit(w, base, config)
    return w
