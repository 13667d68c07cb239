"""Name maps: where each canonical weight (``conformance.weights``) lives among an implementation's parameters.

Every adapter of real code maps the paper's names onto its module's parameters; a name map says it once, as
data, and the helpers (``conformance.adapters.torch``) do the copying both ways. A name map is a dict from
canonical-name patterns to parameter-path patterns::

    {"E": "embed.weight",
     "*.{l}.self_attn.W_QKV": "*.layers.{l}.attn.qkv.weight",      # fused [W_Q | W_K | W_V]
     "decoder.{l}.cross_attn.W_Q": "decoder.layers.{l}.cross.q.weight",
     "decoder.{l}.cross_attn.W_KV": "decoder.layers.{l}.cross.kv.weight",
     "*.{l}.norm*.gamma": "*.layers.{l}.ln*.weight"}

Keys: ``{l}`` is a layer index; each ``*`` matches a run of characters without a dot, and the value
receives the runs in order. ``W_QKV``/``b_QKV`` name a fused projection [W_Q | W_K | W_V] (d_model,
3 d_model) in the orientation x @ W, ``W_KV``/``b_KV`` a fused [W_K | W_V]: the canonical W_Q, W_K, W_V
are then thirds (or halves) of it, split along the output axis.

Values: a glob over parameter paths (after the substitutions, any ``*`` or ``?`` left must single out one
parameter); a compiled regular expression (``{l}`` replaced, matched in full); or a list of them, for
copies (one shared table E written into separate source, target and output tables, read back from the
first). A value ending in ``.T`` is stored transposed, (out, in) as ``nn.Linear`` stores it; without the
suffix the torch helpers transpose ``nn.Linear`` weights and nothing else.

This module is pure Python: it resolves names, it copies nothing.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass

# A fused projection and the canonical tensors it holds, in order along its output axis.
FUSED = {"W_QKV": ("W_Q", "W_K", "W_V"), "b_QKV": ("b_Q", "b_K", "b_V"), "W_KV": ("W_K", "W_V"), "b_KV": ("b_K", "b_V")}
TRANSPOSED_SUFFIX = ".T"
# An entry may name a module instead of a parameter: a matrix's entry gives its bias too, a norm's its two vectors.
MATRIX_OF = {"b_Q": "W_Q", "b_K": "W_K", "b_V": "W_V", "b_O": "W_O", "b1": "W1", "b2": "W2"}
NORM_PARTS = {"gamma": "weight", "beta": "bias"}


@dataclass(frozen=True)
class Slot:
    """Where one canonical tensor lives: block ``block`` of ``blocks`` (along the output axis) of the
    parameter at ``path``; ``transposed`` True when stored (out, in), None when the framework decides."""

    path: str
    block: int = 0
    blocks: int = 1
    transposed: bool | None = None


class NameMapError(ValueError):
    """The name map does not fit the module: raised with every problem at once (``problems``), each naming
    the canonical name, what the map gave and the closest parameter paths. Fix the map, or print a draft
    with ``conformance.adapters.propose_mapping``."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        listed = "\n".join(f"  - {problem}" for problem in problems)
        super().__init__(f"the name map does not fit the module ({len(problems)} problems):\n{listed}")


def spellings(name: str) -> list[tuple[str, int, int, str | None]]:
    """The names a canonical tensor may be listed under, in order, with its block and, when the entry names a
    module, which of its parameters: the name itself, each fused projection that holds it, then (a bias) its
    matrix's entries, or (a norm's gamma, beta) the norm. ``spellings("encoder.0.self_attn.W_K")`` ->
    ``[("encoder.0.self_attn.W_K", 0, 1, None), ("encoder.0.self_attn.W_QKV", 1, 3, None),
    ("encoder.0.self_attn.W_KV", 0, 2, None)]``."""
    prefix, _, leaf = name.rpartition(".")

    def beside(other: str) -> str:
        return f"{prefix}.{other}" if prefix else other

    found = [(name, 0, 1, None)]
    found += [(beside(fused), parts.index(leaf), len(parts), None) for fused, parts in FUSED.items() if leaf in parts]
    if leaf in MATRIX_OF:
        matrix = spellings(beside(MATRIX_OF[leaf]))
        found += [(spelling, block, blocks, "bias") for spelling, block, blocks, _ in matrix]
    if leaf in NORM_PARTS and prefix:
        found.append((prefix, 0, 1, NORM_PARTS[leaf]))
    return found


def key_pattern(key: str) -> re.Pattern:
    """A key as a regular expression: ``{l}`` -> the group ``l`` (digits), each ``*`` -> ``s0``, ``s1``, ..."""
    parts, stars, layer_seen = [], 0, False
    for token in re.split(r"(\{l\}|\*)", key):
        if token == "{l}":
            parts.append(r"(?P=l)" if layer_seen else r"(?P<l>\d+)")
            layer_seen = True
        elif token == "*":
            parts.append(rf"(?P<s{stars}>[^.]+)")
            stars += 1
        else:
            parts.append(re.escape(token))
    return re.compile("".join(parts))


def substitute(value, match: re.Match):
    """The value pattern with the key's layer and ``*`` runs filled in (a regex gets the layer only)."""
    layer = match.groupdict().get("l")
    if isinstance(value, re.Pattern):
        return re.compile(value.pattern.replace("{l}", layer or "{l}"))
    text = value.replace("{l}", layer) if layer is not None else value
    for i in range(sum(1 for group in match.groupdict() if group.startswith("s"))):
        text = text.replace("*", match.group(f"s{i}"), 1)  # the i-th run fills the i-th star
    return text


def _targets(value) -> list:
    return list(value) if isinstance(value, list | tuple) else [value]


def find(pattern, paths: list[str]) -> list[str]:
    """The parameter paths a value pattern (glob, regex, or a plain path) selects."""
    if isinstance(pattern, re.Pattern):
        return [path for path in paths if pattern.fullmatch(path)]
    if not any(c in pattern for c in "*?["):
        return [pattern] if pattern in paths else []
    return [path for path in paths if fnmatch.fnmatchcase(path, pattern)]


class NameMap:
    """A name map, compiled once; ``resolve`` places canonical names among a module's parameter paths."""

    def __init__(self, names: dict):
        self.names = dict(names)
        self._keys = [(key, key_pattern(key), value) for key, value in self.names.items()]

    def entry(self, name: str) -> tuple[str, object, re.Match, int, int, str | None] | None:
        """(key, value, match, block, blocks, part) of the entry listing ``name`` (see ``spellings``), else
        None; ``ValueError`` when two entries list it."""
        for spelling, block, blocks, part in spellings(name):
            hits = [(key, value, m) for key, pattern, value in self._keys if (m := pattern.fullmatch(spelling))]
            if len(hits) > 1:
                raise ValueError(f"{name} is listed by {len(hits)} entries: {', '.join(k for k, _, _ in hits)}")
            if hits:
                key, value, match = hits[0]
                return key, value, match, block, blocks, part
        return None

    def resolve(self, canonical: Iterable[str], paths: Iterable[str]) -> dict[str, tuple[Slot, ...]]:
        """Every canonical name -> its slots (several: copies); ``NameMapError`` with every problem."""
        paths, resolved, problems = list(paths), {}, []
        for name in canonical:
            try:
                resolved[name] = self._slots(name, paths)
            except ValueError as exc:
                problems.append(str(exc))
        if problems:
            raise NameMapError(problems)
        return resolved

    def _slots(self, name: str, paths: list[str]) -> tuple[Slot, ...]:
        found = self.entry(name)
        if found is None:
            raise ValueError(f"no entry for {name}: add a key for it (e.g. {_generalised(name)!r})")
        key, value, match, block, blocks, part = found
        slots = []
        for target in _targets(value):
            pattern, transposed = _strip_transposed(substitute(target, match))
            hits = place(pattern, part, paths)
            if len(hits) != 1:
                raise ValueError(_not_one(name, key, pattern, part, hits, paths))
            slots.append(Slot(hits[0], block, blocks, transposed))
        return tuple(slots)


# A module's parameters as the frameworks name them: PyTorch's weight and bias; Flax's kernel, scale and embedding;
# Keras' kernel, gamma, beta and embeddings. The first that the module has is the one.
WEIGHT_LEAVES = ("weight", "kernel", "scale", "gamma", "embedding", "embeddings")
BIAS_LEAVES = ("bias", "beta")


def place(pattern, part: str | None, paths: list[str]) -> list[str]:
    """The parameters a target selects: itself; a module's ``part`` (its bias beside its weight:
    ``lin.weight`` -> ``lin.bias``, ``dense.kernel`` -> ``dense.bias``, ``in_proj_weight`` -> ``in_proj_bias``); a
    module named for a matrix, a norm or a table: its weight (kernel, scale, embedding...)."""
    if part == "bias" and isinstance(pattern, str) and pattern.endswith(("weight", "kernel")):
        return find(pattern.removesuffix("weight").removesuffix("kernel") + "bias", paths)
    leaves = {"weight": WEIGHT_LEAVES, "bias": BIAS_LEAVES}.get(part, (part,)) if part is not None else ()
    if part is None:
        found = find(pattern, paths)
        if found:
            return found
        leaves = WEIGHT_LEAVES
    for leaf in leaves:
        found = find(_child(pattern, leaf), paths)
        if found:
            return found
    return []


def _child(pattern, part: str):
    if isinstance(pattern, re.Pattern):
        return re.compile(pattern.pattern + re.escape(f".{part}"))
    return f"{pattern}.{part}"


def _strip_transposed(pattern):
    if isinstance(pattern, str) and pattern.endswith(TRANSPOSED_SUFFIX):
        return pattern[: -len(TRANSPOSED_SUFFIX)], True
    return pattern, None


def _generalised(name: str) -> str:
    return re.sub(r"\.\d+\.", ".{l}.", name, count=1)


def _not_one(name: str, key: str, pattern, part: str | None, hits: list[str], paths: list[str]) -> str:
    shown = pattern.pattern if isinstance(pattern, re.Pattern) else pattern
    if part is not None:
        shown = f"{shown} (its {part})"
    if hits:
        return f"{name} (key {key!r}) -> {shown!r} matches {len(hits)} parameters: {', '.join(hits[:5])}"
    close = difflib.get_close_matches(shown.split(" ")[0], paths, n=3, cutoff=0.5)
    hint = f"; closest: {', '.join(close)}" if close else ""
    return f"{name} (key {key!r}) -> {shown!r} matches no parameter{hint}"


def sub_names(names: dict, canonical_prefix: str, module_prefix: str) -> dict:
    """The part of a model's name map under one layer or sublayer, relative to both prefixes, for loading
    a component's weights (``"self_attn.W_Q"``, ...) into a standalone module of that kind.

    ``sub_names({"*.{l}.ffn.W1": "*.layers.{l}.linear1.weight"}, "encoder.{l}.", "encoder.layers.{l}.")``
    is ``{"ffn.W1": "linear1.weight"}``."""
    compiled, relative = NameMap(names), {}
    prefix, module = canonical_prefix.replace("{l}", "0"), module_prefix.replace("{l}", "0")
    for leaf in _component_leaves(canonical_prefix):
        found = compiled.entry(prefix + leaf)
        if found is None or found[3:] != (0, 1, None):  # only entries that list this very name
            continue
        targets = [substitute(target, found[2]) for target in _targets(found[1])]
        if all(isinstance(t, str) and t.startswith(module) for t in targets):
            stripped = [t[len(module):] for t in targets]
            relative[leaf] = stripped if isinstance(found[1], list | tuple) else stripped[0]
    return relative


def _component_leaves(canonical_prefix: str) -> list[str]:
    """Every name a component under ``canonical_prefix`` may hold, fused spellings included."""
    attention = ["W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O", *FUSED]
    if canonical_prefix.endswith(("self_attn.", "cross_attn.")):
        return attention
    if canonical_prefix.endswith("ffn."):
        return ["W1", "b1", "W2", "b2"]
    if re.search(r"norm\d\.$", canonical_prefix):
        return ["gamma", "beta"]
    return ([f"{sub}.{leaf}" for sub in ("self_attn", "cross_attn") for leaf in attention]
            + [f"norm{i}{p}" for i in (1, 2, 3) for p in ("", ".gamma", ".beta")]
            + [f"ffn.{w}" for w in ("W1", "b1", "W2", "b2")])


# --------------------------------------------------------------------------------------------------
# Where a layer or sublayer lives: derived from the model's map, so an adapter need not say it twice
# --------------------------------------------------------------------------------------------------

_ANY_LAYER = "987654"  # a layer index no model has: stands for {l} while a pattern is resolved


def module_of(names: dict, canonical_prefix: str) -> str | None:
    """The module path pattern that holds what the map lists under ``canonical_prefix`` (a layer, an attention,
    an FFN): the longest common module of its entries' targets, or None when the map lists nothing there.

    ``module_of({"*.{l}.ffn.W1": "*.layers.{l}.ff.lin1", "*.{l}.ffn.W2": "*.layers.{l}.ff.lin2"}, "encoder.{l}.ffn.")``
    is ``"encoder.layers.{l}.ff."``; ``"encoder.{l}."`` gives ``"encoder.layers.{l}."``. Targets are compared as
    written (a glob's ``*`` is text here) and regular expressions are left out."""
    compiled, prefix = NameMap(names), canonical_prefix.replace("{l}", _ANY_LAYER)
    targets = []
    for leaf in _component_leaves(canonical_prefix):
        found = compiled.entry(prefix + leaf)
        if found is not None:
            targets += [t for t in (substitute(v, found[2]) for v in _targets(found[1])) if isinstance(t, str)]
    if not targets:
        return None
    parents = [t.removesuffix(TRANSPOSED_SUFFIX).split(".")[:-1] for t in targets]
    common = []
    for column in zip(*parents, strict=False):
        if len(set(column)) != 1:
            break
        common.append(column[0])
    return (".".join(common) + ".").replace(_ANY_LAYER, "{l}") if common else ""


def layer_names(names: dict, stack: str) -> dict:
    """The map of one ``stack`` layer built alone (``"self_attn.W_Q"``, ``"norm1"``, ...), relative to the layer's
    module (``module_of``): what ``load_component`` needs for ``encoder_layer`` and ``decoder_layer``."""
    return sub_names(names, f"{stack}.{{l}}.", module_of(names, f"{stack}.{{l}}.") or "")


# The sublayer a component part builds alone: its canonical prefix in the model, and the norm a composite
# sublayer (LayerNorm(x + Sublayer(x))) folds in.
SUBLAYERS = {"self_attn": ("encoder.{l}.self_attn.", "encoder.{l}.norm1"),
             "cross_attn": ("decoder.{l}.cross_attn.", "decoder.{l}.norm2"),
             "ffn": ("encoder.{l}.ffn.", "encoder.{l}.norm2")}


def sublayer_names(names: dict, sublayer: str, *, with_norm: bool = False) -> dict:
    """The map of one attention or FFN (``sublayer``: self_attn, cross_attn, ffn) built alone, relative to its module;
    ``with_norm``: the composite sublayer's norm too, as ``"norm"`` (``attention_sublayer``, ``ffn_sublayer``)."""
    canonical, norm = SUBLAYERS[sublayer]
    module = module_of(names, canonical) or ""
    relative = sub_names(names, canonical, module)
    for leaf in ("", ".gamma", ".beta") if with_norm else ():
        found = NameMap(names).entry(norm.replace("{l}", _ANY_LAYER) + leaf)
        if found is not None and found[3:] == (0, 1, None) and isinstance(found[1], str):
            target = substitute(found[1], found[2]).replace(_ANY_LAYER, "{l}")
            if target.startswith(module):
                relative[f"norm{leaf}"] = target[len(module):]
    return relative


def attention_modules(names: dict) -> dict:
    """The attention modules a model's map implies, for ``TorchModel(attention=...)``: each sublayer's module
    (``module_of``), unless that is the whole layer (its projections sit in the layer: nothing to hook)."""
    found = {}
    for stack, sublayer in (("encoder", "self_attn"), ("decoder", "self_attn"), ("decoder", "cross_attn")):
        module, layer = module_of(names, f"{stack}.{{l}}.{sublayer}."), module_of(names, f"{stack}.{{l}}.")
        if module and module != layer:
            found[f"{stack}.{{l}}.{sublayer}"] = module.removesuffix(".")
    return found
