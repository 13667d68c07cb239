"""A draft name map from a module's parameter names and shapes: ``propose_mapping(module, config)``.

Writing the name map by hand means reading the implementation; a draft from the shapes gets most of it
right and says where it guessed. The module must be built with ``config``'s sizes; the more they differ
from each other (d_model, d_ff, the vocabularies), the fewer guesses. The rules, in order:

* a layer is a path with a number in it, under a name with ``enc`` or ``dec`` in it;
* every matrix is seen in the orientation x @ W (an ``nn.Linear`` weight, and ``nn.MultiheadAttention``'s
  in-projection, transposed); (d, 3d) is a fused W_QKV, (d, 2d) a fused W_KV, (d, d_ff) W1, (d_ff, d) W2,
  (d, d) an attention projection, named by the words of its path below the attention (``ROLE_HINTS``: q_proj,
  query, linear_keys, w_v, wq, to_q, out_proj, final_linear, ...); only the projections the names say nothing
  about (or that two names claim) take the roles left over, in the order the module registers them;
* an attention is the module whose name says so (``attn``, ``attention``) or else the parent of its
  projections; in a decoder layer the one named cross/src/enc/context/multihead/mem is the cross-attention,
  else the second one;
* the LayerNorms of a layer are norm1, norm2 (norm3) in the order the layer registers them;
* a LayerNorm's vectors are told by what they hold when built: ones are its gain gamma, zeros its shift beta; a
  vector built otherwise (drawn at random) by its name (weight, gamma, scale, g, a_2: gamma; bias, beta, b, b_2:
  beta), and one whose role neither tells is left out with a TODO, never guessed;
* (vocab, d) tables outside the layers, or anywhere under a name that says embedding (emb, embed, lut, tok,
  word: ``src_embed.0.lut.weight``, ``encoder.embeddings.emb_luts.0.weight``), are E (copies when there are
  several and the config shares them), or E_src/E_tgt by their number of rows (else their names); an output
  projection (an ``nn.Linear`` from d to the target vocabulary, or a table named like one: out, generator,
  lm_head, logits, proj) that is not also an embedding (a tensor shared by assignment is one tensor) is W_out,
  or a copy of the table the config ties it to; everything else has no canonical name.

Pure Python on anything with ``named_parameters()`` and ``named_modules()`` (no torch import).
"""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass, field

from conformance.config import ModelConfig

ATTENTION_WORDS = ("attn", "attention")
CROSS_WORDS = ("cross", "src", "enc", "context", "multihead", "mem", "inter")
# The words (split at _ and .) that name a projection's role: q_proj, query, linear_query (OpenNMT-py), w_q, wq,
# to_q, ...; out_proj, o_proj, final_linear, linear_out, w_o, wo, to_out for the output. Q, K, V come first:
# "proj" in q_proj says nothing once "q" has spoken.
ROLE_HINTS = {"Q": ("q", "query", "queries", "wq", "qs"), "K": ("k", "key", "keys", "wk", "ks"),
              "V": ("v", "value", "values", "wv", "vs"),
              "O": ("o", "out", "output", "wo", "final", "proj", "fc", "dense", "concat")}
TABLE_HINTS = ("emb", "lut", "tok", "word", "shared")
# The words (split at _ and .) that name an output projection: generator.proj, lm_head, fc_out, to_logits, ...
OUTPUT_WORDS = ("out", "output", "generator", "head", "logits", "logit", "proj", "projection", "classifier", "pred")
TARGET_WORDS = ("tgt", "trg", "target", "dec", "decoder")
GAMMA_LEAVES = ("weight", "gamma", "scale", "g", "a_2", "a2", "alpha")
BETA_LEAVES = ("bias", "beta", "b", "b_2", "b2", "shift", "offset")


@dataclass(frozen=True)
class Parameter:
    """One parameter: its path, its shape as stored, the class name of the module that owns it, and the (path,
    owner) of each other name of the same tensor (a weight tied by assignment: ``out.weight = emb.weight``)."""

    path: str
    shape: tuple[int, ...]
    owner: str = ""
    aliases: tuple[tuple[str, str], ...] = ()
    fill: float | None = None  # the one value every entry holds when built (a norm's ones, a shift's zeros), if any

    @property
    def names(self) -> list[tuple[str, str]]:
        """(path, owner) of every name of the tensor, its own first."""
        return [(self.path, self.owner), *self.aliases]

    @property
    def leaf(self) -> str:
        return self.path.rpartition(".")[2]

    @property
    def module(self) -> str:
        return self.path.rpartition(".")[0]

    @property
    def stored_transposed(self) -> bool:
        """nn.Linear keeps (out, in); MultiheadAttention's in_proj_weight too."""
        return len(self.shape) == 2 and (("Linear" in self.owner and self.leaf == "weight")
                                         or ("MultiheadAttention" in self.owner and self.leaf.endswith("proj_weight")))

    @property
    def oriented(self) -> tuple[int, ...]:
        """The shape in the orientation x @ W."""
        return tuple(reversed(self.shape)) if self.stored_transposed else self.shape


@dataclass
class Proposal:
    """The draft: the name map, the attention modules for hooks, what has no canonical name, and the guesses."""

    names: dict = field(default_factory=dict)
    attention: dict = field(default_factory=dict)
    unmapped: list[str] = field(default_factory=list)
    guesses: list[str] = field(default_factory=list)

    def render(self, *, attention: bool = True) -> str:
        """Python source of the draft, ready to paste into an adapter (``attention=False``: without the attention
        modules, where ``TorchAdapter`` derives the same ones from the name map)."""
        lines = ["NAMES = {"] + [f"    {literal(k)}: {literal(v)}," for k, v in self.names.items()] + ["}"]
        if attention:
            lines += ["ATTENTION = {"] + [f"    {literal(k)}: {literal(v)}," for k, v in self.attention.items()]
            lines += ["}"]
        if self.unmapped:
            lines.append("# No canonical name: load_weights gives a bias, a norm's vector or a learned positional table"
                         " its identity value")
            lines.append("# (0; 1 for a scale) and refuses a matrix until it is mapped; the report lists them:")
            lines += [f"#   {path}" for path in self.unmapped]
        if self.guesses:
            lines.append("# Check these guesses:")
            lines += [line for guess in self.guesses for line in _wrapped_comment(f"TODO {guess}")]
        return "\n".join(lines)


def _wrapped_comment(text: str, width: int = 116) -> list[str]:
    lines = textwrap.wrap(text, width - 4, break_on_hyphens=False)
    return [f"#   {lines[0]}", *(f"#        {line}" for line in textwrap.wrap(" ".join(lines[1:]), width - 9,
                                                                         break_on_hyphens=False))]


def parameters_of(module) -> list[Parameter]:
    """(path, shape, owner class, other names) of every parameter of a torch-like module, each tensor once, under
    the name ``named_parameters()`` gives it."""
    owners = {path: type(sub).__name__ for path, sub in module.named_modules(remove_duplicate=False)}
    tensors: dict[int, tuple[object, list[str]]] = {}
    for path, p in module.named_parameters(remove_duplicate=False):
        tensors.setdefault(id(p), (p, []))[1].append(path)

    def owner(path: str) -> str:
        return owners.get(path.rpartition(".")[0], "")

    return [Parameter(paths[0], tuple(p.shape), owner(paths[0]), tuple((other, owner(other)) for other in paths[1:]),
                      constant_fill(p))
            for p, paths in tensors.values()]


def constant_fill(tensor) -> float | None:
    """The one value a vector holds in every entry (1.0 for a gain built as ones), else None; matrices: None."""
    if len(tuple(tensor.shape)) != 1 or not tensor.shape[0]:
        return None
    values = tensor.detach().flatten().tolist()
    return float(values[0]) if all(v == values[0] for v in values) else None


def propose_mapping(module, config, *, echo: bool = True) -> Proposal:
    """A draft name map for ``module`` (built with ``config``'s sizes), printed unless ``echo=False``."""
    config = config if isinstance(config, ModelConfig) else ModelConfig.from_dict(config)
    proposal = propose(parameters_of(module), config)
    if echo:
        print(proposal.render())
    return proposal


# --------------------------------------------------------------------------------------------------
# The matching
# --------------------------------------------------------------------------------------------------


def propose(parameters: list[Parameter], config: ModelConfig) -> Proposal:
    proposal, found = Proposal(), {}  # found: canonical name (layer 0..N-1) -> path
    layers: dict[tuple[str, int], list[Parameter]] = {}
    outside = []
    for p in parameters:
        where = layer_of(p.path)
        if where and is_table(p, config) and any(w in p.path.lower() for w in TABLE_HINTS):
            where = None  # an embedding table nested under a numbered path (emb_luts.0, src_embed.0.lut)
        (layers.setdefault(where, []) if where else outside).append(p)
    for (stack, index), params in layers.items():
        for name, path in match_layer(stack, params, config, proposal).items():
            found[f"{stack}.{index}.{name}"] = path
    found.update(match_tables(outside, config, proposal))
    generalise(found, proposal)
    mapped = {path.removesuffix(".T") for value in found.values()
              for path in ([value] if isinstance(value, str) else value)}
    proposal.unmapped = [p.path for p in parameters if p.path not in mapped]
    proposal.guesses = list(dict.fromkeys(proposal.guesses))
    return proposal


LAYER_WORDS = ("layer", "block")


def _layer_number(path: str) -> re.Match | None:
    """The number in ``path`` that says which layer: after a part that says layer or block, else the first."""
    numbers = list(re.finditer(r"(^|\.)(\d+)\.", path))
    said = [m for m in numbers if any(word in path[: m.start(2)].rstrip(".").rpartition(".")[2].lower()
                                      for word in LAYER_WORDS)]
    return (said or numbers or [None])[0]


def layer_of(path: str) -> tuple[str, int] | None:
    """("encoder" | "decoder", index) of a parameter inside a layer, else None. The index is the number after a part
    that says layer or block (``encoder.0.encoder_layer.1``: a Keras stack numbered inside its own numbered
    encoder), else the first number of the path."""
    match = _layer_number(path)
    if not match:
        return None
    before = path[: match.start(2)].lower()
    stack = "decoder" if "dec" in before else "encoder" if "enc" in before else None
    return (stack, int(match.group(2))) if stack else None


def _unit(p: Parameter) -> str:
    """The attention module a projection belongs to: the last path part that says attention, with its number when one
    of several (Keras' ``multi_head_attention.1``), else its parent. The projection's own module is one only when no
    module above it says attention (Keras names an attention's output projection ``attention_output``)."""
    parts = p.module.split(".")
    says = [any(word in part.lower() for word in ATTENTION_WORDS) for part in parts]
    for i in range(len(parts) - 1, -1, -1):
        if says[i] and not (i == len(parts) - 1 and any(says[:i])):
            numbered = i + 1 < len(parts) and parts[i + 1].isdigit()
            return ".".join(parts[: i + 2 if numbered else i + 1])
    return p.module if "MultiheadAttention" in p.owner else p.module.rpartition(".")[0]


def match_layer(stack: str, params: list[Parameter], config: ModelConfig, proposal: Proposal) -> dict[str, str]:
    d, d_ff = config.d_model, config.d_ff
    names: dict[str, str] = {}
    attention_shapes = {(d, d), (d, 3 * d), (d, 2 * d)}
    matrices = [p for p in params if len(p.shape) == 2]
    units: dict[str, list[Parameter]] = {}
    for p in matrices:
        if p.oriented in attention_shapes:
            units.setdefault(_unit(p), []).append(p)
    for sub, unit in zip(_attention_roles(stack, list(units), proposal), units, strict=False):
        names.update({f"{sub}.{k}": v for k, v in match_attention(unit, units[unit], params, d, proposal).items()})
    names.update(match_ffn(matrices, params, d, d_ff, proposal))
    names.update(match_norms(stack, params, d, proposal, set(names.values())))
    return names


def _attention_roles(stack: str, units: list[str], proposal: Proposal) -> list[str]:
    if stack == "encoder":
        return ["self_attn"] * min(1, len(units))
    cross = [u for u in units if any(w in u.rpartition(".")[2].lower() for w in CROSS_WORDS)]
    if len(units) == 2 and len(cross) == 1:
        return ["cross_attn" if u in cross else "self_attn" for u in units]
    if units:  # none found: nothing taken, nothing to check
        proposal.guesses.append("decoder attentions: the first registered is taken as self-attention, the second as"
                                f" cross-attention ({', '.join(_generic(u) for u in units)})")
    return ["self_attn", "cross_attn"][: len(units)]


def match_attention(unit: str, matrices: list[Parameter], params: list[Parameter], d: int,
                    proposal: Proposal) -> dict[str, str]:
    names: dict[str, str] = {}
    square = []
    for p in matrices:
        if p.oriented == (d, 3 * d):
            names["W_QKV"] = _with_bias(names, p, params, "b_QKV")
        elif p.oriented == (d, 2 * d):
            names["W_KV"] = _with_bias(names, p, params, "b_KV")
        else:
            square.append(p)
    taken = set("QKV" if "W_QKV" in names else "KV" if "W_KV" in names else "")
    roles = [r for r in "QKVO" if r not in taken]
    for p, role in _roles(square, roles, unit, proposal).items():
        names[f"W_{role}"] = _with_bias(names, p, params, f"b_{role}")
    if any(not p.stored_transposed for p in square):
        proposal.guesses.append(f"{_generic(unit)}: square projections outside nn.Linear are taken as x @ W; where"
                                " your code computes x @ W.T (F.linear), add '.T' to the path")
    return names


def role_of(words: list[str], roles: list[str]) -> str | None:
    """The one role among ``roles`` the words name (Q, K, V before O), else None."""
    for group in ([r for r in roles if r != "O"], [r for r in roles if r == "O"]):
        named = [r for r in group if any(w in ROLE_HINTS[r] for w in words)]
        if named:
            return named[0] if len(named) == 1 else None
    return None


def _words(p: Parameter, unit: str) -> list[str]:
    """The words of a projection's path below its attention: self_attn.linear_keys.weight -> linear, keys."""
    below = p.path[len(unit) + 1:] if p.path.startswith(unit + ".") else p.path.rpartition(".")[2]
    return [w for w in re.split(r"[._]+", below.lower()) if w and w not in ("weight", "bias", "linear", "lin")]


def _roles(square: list[Parameter], roles: list[str], unit: str, proposal: Proposal) -> dict[Parameter, str]:
    """Q, K, V, O by the words of the projections' names (``ROLE_HINTS``); the projections the names say
    nothing about, or that two names claim, take the roles left over in the order the module registers them."""
    claims: dict[str, list[Parameter]] = {}
    for p in square:
        role = role_of(_words(p, unit), roles)
        if role:
            claims.setdefault(role, []).append(p)
    named = {ps[0]: role for role, ps in claims.items() if len(ps) == 1}
    for role, ps in claims.items():
        if len(ps) > 1:
            paths = ", ".join(_generic(p.path) for p in ps)
            proposal.guesses.append(f"{_generic(unit)}: {paths} all look like W_{role} by name")
    rest = [p for p in square if p not in named]
    left = [r for r in roles if r not in named.values()]
    if rest:
        which = f" ({', '.join(_generic(p.path) for p in rest)})" if named else ""
        taken = ", ".join("W_" + r for r in left[:len(rest)])
        proposal.guesses.append(f"{_generic(unit)}: projections taken as {taken} in the order the module registers"
                                f" them{which}")
    named.update(zip(rest, left, strict=False))
    return {p: named[p] for p in square if p in named}


def _bias_leaves(leaf: str) -> set[str]:
    """Where a matrix's bias sits beside it: weight -> bias, kernel -> bias, in_proj_weight -> in_proj_bias, W_qkv ->
    b_qkv."""
    found = {leaf.replace("weight", "bias")} if "weight" in leaf else set()
    found |= {"bias"} if leaf == "kernel" else set()  # Flax's and Keras' Dense
    return found | ({"b" + leaf[1:]} if leaf[:1] in "Ww" else set())


def _with_bias(names: dict, p: Parameter, params: list[Parameter], bias_name: str) -> str:
    leaves = _bias_leaves(p.leaf)
    bias = next((b for b in params if b.module == p.module and len(b.shape) == 1 and b.leaf in leaves), None)
    if bias is not None:
        names[bias_name] = bias.path
    return p.path


def match_ffn(matrices: list[Parameter], params: list[Parameter], d: int, d_ff: int,
              proposal: Proposal) -> dict[str, str]:
    names: dict[str, str] = {}
    first = [p for p in matrices if p.oriented == (d, d_ff)]
    second = [p for p in matrices if p.oriented == (d_ff, d)]
    if d == d_ff:
        proposal.guesses.append("d_ff equals d_model: the FFN's two matrices cannot be told apart by shape")
    if first:
        names["ffn.W1"] = _with_bias(names, first[0], params, "ffn.b1")
    if second:
        names["ffn.W2"] = _with_bias(names, second[-1], params, "ffn.b2")
    return names


def match_norms(stack: str, params: list[Parameter], d: int, proposal: Proposal, used: set[str]) -> dict[str, str]:
    vectors = [p for p in params if p.shape == (d,) and p.path not in used
               and ("norm" in p.owner.lower() or "norm" in p.module.lower() or re.search(r"(^|\.)ln", p.module))]
    modules = list(dict.fromkeys(p.module for p in vectors))
    expected = 2 if stack == "encoder" else 3
    if len(modules) != expected:
        proposal.guesses.append(f"{stack} layer: {len(modules)} LayerNorms found where the paper has {expected}")
    names = {}
    for i, module in enumerate(modules[:expected], start=1):
        for p in (p for p in vectors if p.module == module):
            role = norm_role(p)
            if role is None:
                proposal.guesses.append(f"{p.path} {p.shape}: a vector of {stack} LayerNorm {i} built neither as ones"
                                        " (a gain) nor as zeros (a shift), its name telling neither: map it to"
                                        f" '{stack}.<layer>.norm{i}.gamma' or '.beta' by what its forward does")
                continue
            names[f"norm{i}.{role}"] = p.path
    if any(not m.endswith(str(i)) for i, m in enumerate(modules[:expected], start=1)):
        proposal.guesses.append(f"{stack} layer norms: norm1, norm2{', norm3' if expected == 3 else ''} in the order"
                                " the layer registers them")
    return names


def norm_role(p: Parameter) -> str | None:
    """"gamma" or "beta" for a LayerNorm's vector: ones when built are a gain, zeros a shift; else its name says,
    or None."""
    if p.fill == 1.0:
        return "gamma"
    if p.fill == 0.0:
        return "beta"
    leaf = p.leaf.lower()
    return "gamma" if leaf in GAMMA_LEAVES else "beta" if leaf in BETA_LEAVES else None


def is_table(p: Parameter, config: ModelConfig) -> bool:
    """A (vocab, d_model) embedding table, or an output projection (d_model, tgt_vocab) in x @ W."""
    d = config.d_model
    return (p.oriented in ((config.src_vocab, d), (config.tgt_vocab, d), (d, config.tgt_vocab))
            or p.shape in ((config.src_vocab, d), (config.tgt_vocab, d)))


def words_of(path: str) -> set[str]:
    return set(re.split(r"[._\d]+", path.lower())) - {""}


def is_output(p: Parameter, config: ModelConfig) -> bool:
    """An output projection: an nn.Linear from d_model to the target vocabulary, a raw (d_model, tgt_vocab) matrix
    (x @ W: its columns are the vocabulary), or a table named like one."""
    d, vocab = config.d_model, config.tgt_vocab
    return (p.oriented == (d, vocab) and p.oriented != (vocab, d)) or any(
        ("Linear" in owner and path.endswith(".weight") and p.shape == (vocab, d)) or words_of(path) & set(OUTPUT_WORDS)
        for path, owner in p.names)


def is_embedding(p: Parameter) -> bool:
    """A table tokens are looked up in: an nn.Embedding's, or one whose name says so, under any of its names; an
    nn.Linear's weight only as a second name of an embedding's (``trg_word_prj``, a Linear, is no table)."""
    return any("Embedding" in owner or ("Linear" not in owner and any(w in path.lower() for w in TABLE_HINTS))
               for path, owner in p.names)


def split_tables(tables: list[Parameter], config: ModelConfig) -> tuple[list[Parameter], list[Parameter]]:
    """(embeddings, outputs): the output projections that are no embedding table (a tied output is the table
    itself, under a second name), and the rest."""
    outputs = [p for p in tables if is_output(p, config) and not is_embedding(p)]
    return [p for p in tables if p not in outputs], outputs


def tables_of(params: list[Parameter], config: ModelConfig) -> list[Parameter]:
    """The vocabulary tables outside the layers (or named like tables inside them), those that say embedding first."""
    tables = [p for p in params if is_table(p, config) and (not layer_of(p.path) or is_embedding(p))]
    return sorted(tables, key=lambda p: not any(w in p.path.lower() for w in TABLE_HINTS))


def match_tables(params: list[Parameter], config: ModelConfig, proposal: Proposal) -> dict[str, object]:
    tables = tables_of(params, config)
    if not tables:
        proposal.guesses.append("no embedding table found: map E by hand")
        return {}
    embeddings, outputs = split_tables(tables, config)
    found: dict[str, object] = {}
    if config.share_embeddings:
        shared = embeddings + (outputs if config.tie_output else [])
        if len(shared) > 1:
            proposal.guesses.append("separate tables serve one shared E: load_weights copies E into each; declare"
                                    " Conventions(ties_embeddings=False)")
        if shared:
            found["E"] = [p.path for p in shared] if len(shared) > 1 else shared[0].path
    else:
        for p in embeddings:
            side = _side(p, config)
            if found.setdefault(side, p.path) != p.path:
                proposal.guesses.append(f"{p.path} looks like {side} too ({found[side]} taken)")
        if config.tie_output and outputs and "E_tgt" in found:
            proposal.guesses.append(f"{', '.join(p.path for p in outputs)}: an output matrix of its own serves the"
                                    " tied E_tgt as a copy; declare Conventions(ties_embeddings=False)")
            found["E_tgt"] = [found["E_tgt"], *(p.path for p in outputs)]
    if not config.tie_output:
        found.update(_output(outputs, config, proposal))
    return found


def _side(p: Parameter, config: ModelConfig) -> str:
    """E_src or E_tgt: by the number of rows where the vocabularies differ, else by the name."""
    if config.src_vocab != config.tgt_vocab and p.shape[0] in (config.src_vocab, config.tgt_vocab):
        return "E_src" if p.shape[0] == config.src_vocab else "E_tgt"
    return "E_tgt" if any(words_of(path) & set(TARGET_WORDS) for path, _ in p.names) else "E_src"


def _output(outputs: list[Parameter], config: ModelConfig, proposal: Proposal) -> dict[str, str]:
    """W_out (d, tgt_vocab) in x @ W: a raw (tgt_vocab, d) parameter, used as F.linear(y, W), gets '.T'."""
    if not outputs:
        proposal.guesses.append("no output matrix found for an untied output: map W_out by hand")
        return {}
    if len(outputs) > 1:
        proposal.guesses.append(f"{', '.join(p.path for p in outputs)} all look like W_out ({outputs[0].path} taken)")
    p, d = outputs[0], config.d_model
    flipped = p.oriented == (config.tgt_vocab, d) and p.oriented != (d, config.tgt_vocab)
    return {"W_out": p.path + (".T" if flipped else "")}


# --------------------------------------------------------------------------------------------------
# From layer-by-layer to patterns with {l} (and * for what encoder and decoder share)
# --------------------------------------------------------------------------------------------------


def _generic(path: str) -> str:
    """``path`` with its layer's number as {l} (``layer_of``'s number)."""
    match = _layer_number(path)
    return path if match is None else f"{path[: match.start(2)]}{{l}}{path[match.end(2):]}"


def generalise(found: dict[str, object], proposal: Proposal) -> None:
    """Layer 0's entries as patterns with {l}, checked against every other layer; then encoder and decoder
    entries that differ only in the stack's name merged with *."""
    patterns: dict[str, object] = {}
    for name, path in found.items():
        if not layer_of_name(name):
            patterns[name] = path
            continue
        key = _generic(name)
        value = [_generic(p) for p in path] if isinstance(path, list) else _generic(path)
        if patterns.setdefault(key, value) != value:
            proposal.guesses.append(f"{name}: {path} does not follow the pattern {patterns[key]} of layer 0")
    proposal.names = merge_stacks(compact(dict(sorted(patterns.items(), key=lambda item: _rank(item[0])))))
    modules = _attention_modules(patterns)
    order = sorted(modules, key=lambda key: (key.startswith("decoder"), "cross" in key))
    proposal.attention = merge_stacks({key: modules[key] for key in order})


LEAF_ORDER = [name for sub in ("self_attn", "norm1", "cross_attn", "norm2", "ffn", "norm3")
              for name in [sub] + [f"{sub}.{leaf}" for leaf in (
                  "W_QKV", "W_Q", "W_KV", "W_K", "W_V", "W_O", "b_QKV", "b_Q", "b_KV", "b_K", "b_V", "b_O", "gamma",
                  "beta", "W1", "b1", "W2", "b2")]]
BIAS_BESIDE = {"b_Q": "W_Q", "b_K": "W_K", "b_V": "W_V", "b_O": "W_O", "b_QKV": "W_QKV", "b_KV": "W_KV", "b1": "W1",
               "b2": "W2"}


def compact(patterns: dict[str, object]) -> dict[str, object]:
    """Entries a name map need not spell out (``conformance.adapters.names``: an entry may name a module): a
    bias beside its matrix (``lin.bias`` beside ``lin.weight``), and a norm's two vectors, one entry on the norm."""
    out: dict[str, object] = {}
    for key, value in patterns.items():
        prefix, _, leaf = key.rpartition(".")
        matrix = patterns.get(f"{prefix}.{BIAS_BESIDE.get(leaf)}")
        if isinstance(matrix, str) and matrix.endswith("weight") and value == matrix.removesuffix("weight") + "bias":
            continue
        beta = patterns.get(f"{prefix}.beta")
        if leaf == "gamma" and isinstance(value, str) and value.endswith(".weight") \
                and beta == value.removesuffix("weight") + "bias":
            out[prefix] = value.removesuffix(".weight")
            continue
        if leaf == "beta" and prefix in out:
            continue
        out[key] = value
    return out


def _rank(key: str) -> tuple[int, int]:
    """Canonical order: the tables, then each stack's sublayers as conformance.weights lists them."""
    stack, _, rest = key.partition(".{l}.")
    if not rest:
        return (0, ["E", "E_src", "E_tgt", "W_out"].index(key) if key in ("E", "E_src", "E_tgt", "W_out") else 9)
    return (1 if stack == "encoder" else 2, LEAF_ORDER.index(rest) if rest in LEAF_ORDER else len(LEAF_ORDER))


def layer_of_name(name: str) -> bool:
    return bool(re.match(r"(encoder|decoder)\.\d+\.", name))


def _attention_modules(patterns: dict[str, object]) -> dict[str, str]:
    """The module each reported attention sublayer lives in: the common prefix of its projections' paths."""
    modules: dict[str, str] = {}
    for key, value in patterns.items():
        match = re.match(r"((?:encoder|decoder)\.\{l\}\.(?:self|cross)_attn)\.W_", key)
        if match and isinstance(value, str) and match.group(1) not in modules:
            paths = [v for k, v in patterns.items() if k.startswith(match.group(1) + ".W_") and isinstance(v, str)]
            modules[match.group(1)] = _common_module(paths)
    return modules


def _common_module(paths: list[str]) -> str:
    parts = [p.split(".")[:-1] for p in paths]
    common = []
    for column in zip(*parts, strict=False):
        if len(set(column)) != 1:
            break
        common.append(column[0])
    said = [i for i, part in enumerate(common) if any(w in part.lower() for w in ATTENTION_WORDS)]
    if said:  # the module that says attention, not a list of its projections below it (self_attn.linears)
        return ".".join(common[: said[-1] + 1])
    if len(paths) == 1 and common and not any(w in common[-1].lower() for w in ATTENTION_WORDS):
        common = common[:-1]  # a single projection: its parent is the attention
    return ".".join(common)


def merge_stacks(patterns: dict[str, object]) -> dict[str, object]:
    """{"encoder.{l}.X": "encoder.L.{l}.Y", "decoder.{l}.X": "decoder.L.{l}.Y"} -> {"*.{l}.X": "*.L.{l}.Y"}."""
    def twin_of(key: str, value) -> str | None:
        twin = patterns.get(f"decoder.{key[8:]}")
        same = isinstance(value, str) and isinstance(twin, str) and value.count("encoder") == 1 and "*" not in value
        return f"*.{key[8:]}" if same and value.replace("encoder", "*") == twin.replace("decoder", "*") else None

    merged: dict[str, object] = {}
    for key, value in patterns.items():
        if key.startswith("encoder.") and twin_of(key, value):
            merged[twin_of(key, value)] = value.replace("encoder", "*")
        elif not (key.startswith("decoder.") and twin_of(f"encoder.{key[8:]}", patterns.get(f"encoder.{key[8:]}"))):
            merged[key] = value
    return merged


def literal(value) -> str:
    """A value of a name map as Python source, strings in double quotes."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        inner = ", ".join(literal(v) for v in value) + ("," if isinstance(value, tuple) and len(value) == 1 else "")
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    return repr(value)
