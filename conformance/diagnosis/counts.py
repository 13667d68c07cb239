"""A wrong parameter count, explained as a sum of known structural differences.

Real implementations differ from the paper's count in several places at once: untied tables, an output
bias, a final LayerNorm after each stack, learned positions. Each difference is a term whose size
follows from the configuration (``V d``, ``4 d``, ``L d``); the candidate's difference is solved as
the smallest combination of terms that gives it *exactly*, and that combination is named only when the
same terms (the same ``L``) also give the candidate's difference at a second, different configuration.
So "+37,927,048" becomes "untied source and target tables (2 x 37,000 x 512) + output bias (37,000) +
...", and a difference no combination explains stays unexplained.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass

from conformance.config import ModelConfig
from conformance.weights import parameter_count


@dataclass(frozen=True)
class Term:
    """One structural difference: its name, its size for a configuration (0: cannot occur there), and how
    that size is written ("2 x 37,000 x 512")."""

    name: str
    size: Callable[[ModelConfig], int]
    written: Callable[[ModelConfig], str]
    counts: tuple[int, ...] = (1,)  # how many times it may occur


def _attentions(c: ModelConfig) -> int:
    return 3 * c.N  # one per encoder layer, two per decoder layer


def _norms(c: ModelConfig) -> int:
    return 5 * c.N  # two per encoder layer, three per decoder layer


TERMS = (
    Term("separate target embedding table (the shared table counted twice)",
         lambda c: c.tgt_vocab * c.d_model if c.share_embeddings else 0,
         lambda c: f"{c.tgt_vocab:,} x {c.d_model}"),
    Term("separate output matrix (not tied to the embedding)",
         lambda c: c.tgt_vocab * c.d_model if c.tie_output else 0, lambda c: f"{c.tgt_vocab:,} x {c.d_model}"),
    Term("output matrix tied to the embedding (expected separate)",
         lambda c: -c.tgt_vocab * c.d_model if not c.tie_output else 0, lambda c: f"-{c.tgt_vocab:,} x {c.d_model}"),
    Term("output bias", lambda c: c.tgt_vocab, lambda c: f"{c.tgt_vocab:,}"),
    # a final norm after a stack and a norm on the embeddings hold the same 2 d: the count cannot tell them apart
    Term("extra LayerNorm (a final one after a stack, or one on the embeddings)", lambda c: 2 * c.d_model,
         lambda c: f"2 x {c.d_model}", (1, 2, 3, 4)),
    Term("attention biases (the config has none)", lambda c: 0 if c.attention_bias else 4 * c.d_model * _attentions(c),
         lambda c: f"{_attentions(c)} attentions x 4 x {c.d_model}"),
    Term("no attention biases (the config has them)",
         lambda c: -4 * c.d_model * _attentions(c) if c.attention_bias else 0,
         lambda c: f"-{_attentions(c)} attentions x 4 x {c.d_model}"),
    Term("no feed-forward biases", lambda c: -(c.d_ff + c.d_model) * 2 * c.N,
         lambda c: f"-{2 * c.N} FFNs x ({c.d_ff:,} + {c.d_model})"),
    Term("LayerNorm without beta", lambda c: -c.d_model * _norms(c), lambda c: f"-{_norms(c)} norms x {c.d_model}"),
    Term("no cross-attention", lambda c: -(4 * c.d_model**2 + (4 * c.d_model if c.attention_bias else 0)) * c.N,
         lambda c: f"-{c.N} x (4 x {c.d_model}^2{' + 4 x ' + str(c.d_model) if c.attention_bias else ''})"),
)
# Learned positions (or a positional table registered as parameters): R x d, R the maximum length (per
# stack), unknown to the suite: solved from the remainder, and must be the same R at the second size.
POSITIONS = "learned positions (or a positional table counted as parameters)"
MAX_TERMS = 4
MIN_LENGTH = 16  # fewer rows are no positional table (4 d is two norms, not 4 positions)


def combinations(config: ModelConfig, terms: tuple[Term, ...] = TERMS):
    """Every (term, multiplicity) choice of at most MAX_TERMS terms, smallest first."""
    live = [t for t in terms if t.size(config)]
    for k in range(1, MAX_TERMS + 1):
        for chosen in itertools.combinations(live, k):
            for counts in itertools.product(*(t.counts for t in chosen)):
                yield tuple(zip(chosen, counts, strict=True))


def total(combo, config: ModelConfig) -> int:
    return sum(term.size(config) * n for term, n in combo)


def positions(remainder: int, config: ModelConfig) -> int | None:
    """The rows R of positional tables with R x d == remainder and R >= MIN_LENGTH; else None."""
    rows, left = divmod(remainder, config.d_model)
    return rows if remainder > 0 and not left and rows >= MIN_LENGTH else None


def third_size(config: ModelConfig) -> ModelConfig:
    """A third configuration of the same kind, other sizes again: a sum of terms that fits two sizes by
    coincidence (a few norms' worth of learned positions) rarely fits a third."""
    return config.replace(src_vocab=71, tgt_vocab=71 if config.share_embeddings else 67, d_model=40, h=5, d_ff=72,
                          N=4)


def terms_of(text: str | None) -> str | None:
    """An explanation's terms without the numbers of one size: equal for the same terms at any size."""
    return None if text is None else re.sub(r"[-+]?\d[\d,.]*", "#", text.split(";")[0])


def confirmed_at_third(explain, config: ModelConfig, got: int, probe: ModelConfig, probe_got: int,
                       third: ModelConfig, third_got: int) -> str | None:
    """``explain(config, got, probe, probe_got)`` when the same terms also explain the difference with the third
    size in the second's place (the text names it), else None."""
    text = explain(config, got, probe, probe_got)
    if text is None or terms_of(text) != terms_of(explain(config, got, third, third_got)):
        return None
    return f"{text}, and at a third ({_sizes(third)})"


def second_size(config: ModelConfig) -> ModelConfig:
    """A second configuration of the same kind (tied or not, shared or not, biases or not), other sizes, so
    that a difference of one size's worth (V, d, d_ff) shows as what it is. A check asks it of a candidate
    fitted into what the candidate declares (``Candidate.fit``: d_ff = 4 d_model becomes 96 here)."""
    return config.replace(src_vocab=53, tgt_vocab=53 if config.share_embeddings else 61, d_model=24, h=3,
                          d_ff=40, N=3)


def solve(config: ModelConfig, difference: int, probe: ModelConfig, probe_difference: int,
          terms: tuple[Term, ...] = TERMS, variants: tuple = ()) -> list[tuple]:
    """The combinations with the fewest terms that give ``difference`` at ``config`` and ``probe_difference``
    at ``probe``; each solution is (combo, rows R of learned positions or None), the positions counting as a term.
    Each solution must also give each of ``variants``' differences [(config, difference)] at its configuration
    (another declared choice): a tie of one size (an output matrix or a second embedding table, V x d_model each) is
    cut there, and a term that gives the difference only at the configuration asked (V x d_model of a positional
    buffer read as an output matrix) is refused."""
    if difference == 0:
        return []
    found: list[tuple[int, tuple]] = []
    for combo in [(), *combinations(config, terms)]:
        rest, probe_rest = difference - total(combo, config), probe_difference - total(combo, probe)
        if combo and rest == 0 and probe_rest == 0:
            found.append((len(combo), (combo, None)))
        pos = positions(rest, config)
        if pos and pos == positions(probe_rest, probe) and len(combo) < MAX_TERMS:
            found.append((len(combo) + 1, (combo, pos)))
    fewest = min((size for size, _ in found), default=None)
    solutions = [solution for size, solution in found if size == fewest]
    return [solution for solution in solutions if all(_gives(solution, c, d) for c, d in variants)]


def _gives(solution: tuple, config: ModelConfig, difference: int) -> bool:
    combo, pos = solution
    return total(combo, config) + (pos or 0) * config.d_model == difference


def variants_of(config: ModelConfig) -> tuple[ModelConfig, ...]:
    """The configuration with one declared choice changed (tied or not, shared tables or not, attention biases or
    not): where terms of one size at ``config`` part."""
    shared = config.replace(share_embeddings=True, tgt_vocab=config.src_vocab)
    separate = config.replace(share_embeddings=False, tgt_vocab=config.src_vocab + 7)
    return (config.replace(tie_output=not config.tie_output),
            separate if config.share_embeddings else shared,
            config.replace(attention_bias=not config.attention_bias))


def variant_differences(count: Callable[[ModelConfig], int], config: ModelConfig,
                        fit: Callable[[ModelConfig], ModelConfig]) -> tuple:
    """[(variant, the candidate's count there less the paper's)] for each variant the candidate builds (``fit``
    leaves it a variant) and counts without raising."""
    found = []
    for variant in variants_of(config):
        fitted = fit(variant)
        if fitted == config:
            continue
        try:
            found.append((fitted, int(count(fitted)) - parameter_count(fitted)))
        except Exception:  # noqa: BLE001 - a variant the candidate cannot count cuts no tie
            continue
    return tuple(found)


def describe(solution: tuple, config: ModelConfig) -> str:
    combo, pos = solution
    parts = [f"{term.name} ({term.written(config)}: {term.size(config):+,})" if n == 1 else
             f"{term.name} x {n} ({term.written(config)} each: {term.size(config) * n:+,})" for term, n in combo]
    if pos:
        per_stack = f", e.g. {pos // 2:,} per stack" if pos % 2 == 0 else ""
        parts.append(f"{POSITIONS} ({pos:,} rows x {config.d_model}{per_stack}: {pos * config.d_model:+,})")
    return " + ".join(parts)


def explain_count(config: ModelConfig, got: int, probe: ModelConfig, probe_got: int,
                  variants: tuple = ()) -> str | None:
    """"difference +37,927,048 = ... (the same terms give the difference at a second size: ...)", or None."""
    difference, probe_difference = got - parameter_count(config), probe_got - parameter_count(probe)
    solutions = solve(config, difference, probe, probe_difference, variants=variants)
    if not solutions:
        return None
    confirmed = f"the same terms give {probe_difference:+,} at a second size ({_sizes(probe)})"
    if len(solutions) == 1:
        return f"difference {difference:+,} = {describe(solutions[0], config)}; {confirmed}"
    listed = " | ".join(describe(s, config) for s in solutions[:3])
    return f"difference {difference:+,} = one of (same counts): {listed}; {confirmed}"


def _sizes(c: ModelConfig) -> str:
    vocab = f"V={c.src_vocab}" if c.share_embeddings else f"V={c.src_vocab}/{c.tgt_vocab}"
    return f"{vocab}, d_model={c.d_model}, d_ff={c.d_ff}, N={c.N}"


# -- A size other than the configuration's: the FFN's inner size, the number of layers ------------------------
# A count off by a multiple of one component's size is that component built at another size: d_ff' inner units
# (each of the 2 N FFNs holds (2 d_model + 1) per unit), or N' layers (an encoder and a decoder layer each). The
# size is solved at the configuration and named only when one law (the same constant, or the same fraction of
# the configured size) also gives the difference at the second configuration.


def _ffn_units(config: ModelConfig, difference: int) -> int | None:
    per_unit = 2 * config.N * (2 * config.d_model + 1)
    units, left = divmod(difference, per_unit)
    return config.d_ff + units if not left and config.d_ff + units > 0 else None


def _layers(config: ModelConfig, difference: int) -> int | None:
    one = config.replace(N=1)
    per_layer = parameter_count(one) - parameter_count(one.replace(N=0)) if config.N else 0
    if not per_layer:
        return None
    layers, left = divmod(difference, per_layer)
    return config.N + layers if not left and config.N + layers >= 0 else None


def _law(size: int, configured: int, probe_size: int | None, probe_configured: int) -> str | None:
    """"64" (a constant) or "d_ff / 4" (a fraction of the configured size), whichever the probe's size follows."""
    if probe_size is None:
        return None
    if probe_size == size:
        return "the same at every configuration"
    if size * probe_configured == probe_size * configured:
        ratio = configured / size
        return f"1/{ratio:g} of the configured size" if ratio == int(ratio) else f"{size}/{configured} of it"
    return None


def explain_sizes(config: ModelConfig, got: int, probe: ModelConfig, probe_got: int) -> str | None:
    """"the FFN's inner size is 64 instead of 256 (...)", "3 layers per stack instead of 6", or None."""
    difference, probe_difference = got - parameter_count(config), probe_got - parameter_count(probe)
    if difference == 0:
        return None
    units = _ffn_units(config, difference)
    law = _law(units, config.d_ff, _ffn_units(probe, probe_difference), probe.d_ff) if units else None
    if law:
        return (f"difference {difference:+,} = {2 * config.N} FFNs x (2 x {config.d_model} + 1) x ({units:,} -"
                f" {config.d_ff:,}): the FFN's inner size is {units:,} instead of {config.d_ff:,} ({law}); the same"
                f" size law gives {probe_difference:+,} at a second size ({_sizes(probe)})")
    layers = _layers(config, difference)
    law = _law(layers, config.N, _layers(probe, probe_difference), probe.N) if layers is not None else None
    if law:
        return (f"difference {difference:+,} = ({layers} - {config.N}) x (one encoder and one decoder layer):"
                f" {layers} layers per stack instead of {config.N} ({law}); the same gives {probe_difference:+,} at a"
                f" second size ({_sizes(probe)})")
    return None


# -- Components missing whole: a LayerNorm fewer per layer ----------------------------------------------------
# Real code that leaves a sublayer out usually leaves its norm out with it (a decoder without cross-attention has
# two norms per layer, not three). Tried beside TERMS when TERMS alone explain nothing (``explain_count``'s
# answer is unchanged wherever it had one).
MORE_TERMS = (
    Term("a LayerNorm fewer in each decoder layer", lambda c: -2 * c.d_model * c.N,
         lambda c: f"-{c.N} decoder layers x 2 x {c.d_model}"),
    Term("a LayerNorm fewer in each encoder layer", lambda c: -2 * c.d_model * c.N,
         lambda c: f"-{c.N} encoder layers x 2 x {c.d_model}"),
    Term("a LayerNorm more in each decoder layer", lambda c: 2 * c.d_model * c.N,
         lambda c: f"{c.N} decoder layers x 2 x {c.d_model}"),
    Term("a LayerNorm more in each encoder layer", lambda c: 2 * c.d_model * c.N,
         lambda c: f"{c.N} encoder layers x 2 x {c.d_model}"),
    # each bias of the feed-forward network on its own, and the inner one at the model's width
    Term("no inner feed-forward bias b1", lambda c: -c.d_ff * 2 * c.N, lambda c: f"-{2 * c.N} FFNs x {c.d_ff:,}"),
    Term("no output feed-forward bias b2", lambda c: -c.d_model * 2 * c.N,
         lambda c: f"-{2 * c.N} FFNs x {c.d_model}"),
    Term("the inner feed-forward bias b1 sized d_model, not d_ff", lambda c: (c.d_model - c.d_ff) * 2 * c.N,
         lambda c: f"{2 * c.N} FFNs x ({c.d_model} - {c.d_ff:,})"),
    # one projection's bias (of W_Q, W_K, W_V, W_O) missing in every attention
    Term("a projection's bias missing in every attention", lambda c: -c.d_model * _attentions(c)
         if c.attention_bias else 0, lambda c: f"-{_attentions(c)} attentions x {c.d_model}", (1, 2, 3)),
)


def explain_more(config: ModelConfig, got: int, probe: ModelConfig, probe_got: int,
                 variants: tuple = ()) -> str | None:
    """``explain_count`` with MORE_TERMS beside TERMS, for a difference TERMS alone do not explain."""
    difference, probe_difference = got - parameter_count(config), probe_got - parameter_count(probe)
    solutions = solve(config, difference, probe, probe_difference, TERMS + MORE_TERMS, variants)
    if not solutions:
        return None
    confirmed = f"the same terms give {probe_difference:+,} at a second size ({_sizes(probe)})"
    listed = " | ".join(describe(s, config) for s in solutions[:3])
    one_of = "" if len(solutions) == 1 else "one of (same counts): "
    return f"difference {difference:+,} = {one_of}{listed}; {confirmed}"
