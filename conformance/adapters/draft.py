"""``transformer-conformance template --from module:Name``: an adapter draft for any ``nn.Module`` class or factory
(a Flax NNX class: ``draft_jax``, which ``template_from`` picks).

The class (or function) is imported from the current folder, as the adapter will import it; its construction from
the suite's config is planned parameter by parameter (``conformance.adapters.construct``: config keys by name,
modules and config objects built first, a TODO for what only a person can give); one small model is built with
sizes that tell its parameters apart (``PROBE``; with one vocabulary if it refuses two), and ``propose`` reads the
name map off it. What the built model fixes itself becomes a declaration in ``Conventions.supports``, read off the
model, never guessed: the LayerNorm epsilon, whether the attention's own projections carry biases, one table or two,
and whether the output projection *is* the target table (the same tensor) or a matrix of its own. The draft is a
whole adapter on ``conformance.adapters.torch.TorchAdapter``; a TODO that blocks building (an argument no key names,
a class that cannot be built) raises ``NotImplementedError`` with its text when the model is built, so that
``certify`` reports the model's checks as not implemented, with that reason. docs/walkthrough.md follows a draft
from the command to the report.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from conformance.adapters.construct import HEAD_SIZE, PROBE, Plan, is_module_class, plan
from conformance.adapters.names import NameMap, attention_modules, substitute
from conformance.adapters.propose import Proposal, literal, parameters_of, propose, split_tables, tables_of
from conformance.config import ModelConfig

WIDTH = 116


def import_class(spec: str):
    """``module:Name`` or ``path/to/file.py:Name`` (a class or a function), imported with the current folder on the
    path."""
    location, _, name = spec.partition(":")
    if not name:
        raise ValueError(f"--from {spec!r}: name the class, e.g. my_transformer:Transformer")
    saved = list(sys.path)
    sys.path.insert(0, str(Path.cwd()))
    if location.endswith(".py"):
        sys.path.insert(0, str(Path(location).resolve().parent))
        location = Path(location).stem
    try:
        module = importlib.import_module(location)
    finally:
        sys.path[:] = saved
    if not hasattr(module, name):
        raise ValueError(f"--from {spec!r}: {location} has no {name!r}")
    target = getattr(module, name)
    if not callable(target):
        raise ValueError(f"--from {spec!r}: {location}.{name} is a {type(target).__name__}, not a class or function")
    return location, target


# --------------------------------------------------------------------------------------------------
# The probe: one small model, built as the draft builds it
# --------------------------------------------------------------------------------------------------


def probe(built: Plan) -> tuple[object | None, ModelConfig, str]:
    """(the model, the config it was built with, why it could not be built). Built with two vocabularies, or with
    one where it refuses two (an assertion that they are equal, a table shared by both)."""
    import torch

    failure = ""
    for config in (PROBE, PROBE.replace(tgt_vocab=PROBE.src_vocab)):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            try:
                net = built.build(config)
            except Exception as exc:  # noqa: BLE001 - any error of the user's code: the draft says it and goes on
                failure = failure or f"{type(exc).__name__}: {exc}"
                continue
        if not isinstance(net, torch.nn.Module):
            return None, config, not_a_torch_module(net)
        return net, config, ""
    return None, PROBE, failure


def not_a_torch_module(net) -> str:
    """Why a factory's result cannot be drafted as PyTorch, with the fix: a Flax or Keras model is drafted from its
    class (its constructor planned from the config, as a factory's arguments are)."""
    kind = type(net)
    roots = {base.__module__.split(".")[0] for base in kind.__mro__}
    framework = "Flax" if "flax" in roots else "Keras" if "keras" in roots else None
    if framework is None:
        return f"it returned a {kind.__name__}, not an nn.Module"
    return (f"it returned a {kind.__name__}, a {framework} model: template --from drafts a {framework} model from its"
            f" class (template --from {kind.__module__}:{kind.__name__}), not from a function")


def tying(net, built: Plan, config: ModelConfig) -> ModelConfig:
    """The probe's config with what the model really does with its tables: one table for source and target (one
    vocabulary, or one embedding tensor), and the output tied to the target table (no output matrix apart from the
    embeddings: ``out.weight = emb.weight``, or logits computed from the table itself)."""
    return tying_of(parameters_of(net), built, config)


# The sizes a constructor must take for the checks' configurations to be the model's, and what a model that fixes one
# in its code does: the number of heads leaves every shape alone (nothing tells it from the parameters).
FIXED_SIZES = {"h": "the number of heads", "N": "the number of layers"}


def _taken(built: Plan) -> set[str]:
    """The config keys the construction passes on; a head's size d_model // h gives h."""
    return built.keys | ({"h"} if any(a.source == HEAD_SIZE for a in built.arguments) else set())


def fixed_sizes(built: Plan) -> list[str]:
    """A guess for each size no argument of the construction takes: the model fixes it in its code, and the checks'
    configurations (h = 1 to 4, N = 1 or 2) would not be the model's."""
    taken = _taken(built)
    return [f"no argument of {built.steps[-1].name} takes {what} (c.{key}): if the code fixes it, declare the"
            f" value in supports (\"{key}\": (value,): the checks then ask only that) or pass c.{key} where the code"
            " reads it" for key, what in FIXED_SIZES.items() if key not in taken]


def tying_of(parameters: list, built: Plan, config: ModelConfig) -> ModelConfig:
    """``tying`` on a model's parameters (``propose.Parameter``s, of any framework)."""
    one_vocabulary = "tgt_vocab" not in built.keys or config.src_vocab == config.tgt_vocab
    embeddings, outputs = split_tables(tables_of(parameters, config), config)
    share = one_vocabulary or len(embeddings) == 1
    vocab = config.src_vocab if one_vocabulary or not embeddings else embeddings[0].shape[0]
    if share:
        return config.replace(src_vocab=vocab, tgt_vocab=vocab, share_embeddings=True, tie_output=not outputs)
    return config.replace(share_embeddings=False, tie_output=not outputs)


def inner_width(parameters: list, built: Plan, config: ModelConfig) -> tuple[ModelConfig, tuple[dict, dict]]:
    """The probe's config with the FFN's inner size the built model really has, and the declaration that follows
    when the constructor takes none (``supports``, ``reasons``): a hard-wired 4 d_model is d_ff_ratio (4,). Read off
    the layers' (d_model, x) and (x, d_model) matrices, x none of the attention's widths."""
    from collections import Counter

    from conformance.adapters.propose import layer_of

    if "d_ff" in built.keys:
        return config, ({}, {})
    d = config.d_model
    wide = Counter(p.oriented[1] for p in parameters if layer_of(p.path) and len(p.shape) == 2
                   and p.oriented[0] == d and p.oriented[1] not in (d, 2 * d, 3 * d))
    narrow = {p.oriented[0] for p in parameters if layer_of(p.path) and len(p.shape) == 2 and p.oriented[1] == d}
    widths = [x for x, _ in wide.most_common() if x in narrow]
    if not widths or widths[0] == config.d_ff:
        return config, ({}, {})
    ratio = widths[0] / d
    ratio = int(ratio) if ratio == int(ratio) else ratio
    return config.replace(d_ff=widths[0]), ({"d_ff_ratio": (ratio,)}, {
        "d_ff_ratio": f"the feed-forward network's inner size is fixed at {ratio} d_model in the implementation"})


def attention_biases(net, proposal: Proposal) -> list[bool]:
    """Whether each of the attention's own projections (the W_Q, W_K, W_V, W_O the proposal mapped in the first
    layers, fused or not) carries a bias: read off the module, never off the FFN."""
    from conformance.adapters.names import NameMapError

    names, paths = NameMap(proposal.names), [path for path, _ in net.named_parameters(remove_duplicate=False)]
    found = []
    for sublayer in ("encoder.0.self_attn", "decoder.0.self_attn", "decoder.0.cross_attn"):
        for role in (role for role in "QKVO" if names.entry(f"{sublayer}.W_{role}") is not None):
            try:
                names.resolve([f"{sublayer}.b_{role}"], paths)
                found.append(True)
            except NameMapError:
                found.append(False)
    return found


def limits(net, built: Plan, proposal: Proposal, config: ModelConfig) -> tuple[dict, dict]:
    """What the built model fixes itself, as declarations: eps, attention biases, tables."""
    supports, reasons, keys = {}, {}, built.keys
    eps = {float(m.eps) for m in net.modules() if type(m).__name__ == "LayerNorm"}
    if len(eps) == 1 and ("eps" not in keys or eps != {PROBE.eps}):  # not given, or given and ignored
        supports["eps"], reasons["eps"] = (eps.pop(),), "the LayerNorms' eps is fixed in the implementation"
    biases = attention_biases(net, proposal) if "attention_bias" not in keys else []
    if biases:
        supports["attention_bias"] = (all(biases),)
        reasons["attention_bias"] = (f"the attention projections {'always' if all(biases) else 'never'} carry biases"
                                     if len(set(biases)) == 1 else "some attention projections carry biases, others"
                                     " not: those are set to 0 (and listed)")
    if len(set(biases)) > 1:
        proposal.guesses.append("attention biases on some projections only: declared attention_bias=(False,), the"
                                " biases there set to 0; check")
    if tables_of(parameters_of(net), config):  # no table read: nothing to declare about tying
        supports["share_embeddings"], supports["tie_output"] = (config.share_embeddings,), (config.tie_output,)
        reasons.update(_table_reasons(net, config))
    heads = fixed_heads(net) if "h" not in _taken(built) else set()
    if len(heads) == 1:
        (h,) = heads
        supports["h"], reasons["h"] = (h,), f"the attention modules are built with {h} heads, whatever the config"
    return supports, reasons


HEAD_ATTRIBUTES = ("num_heads", "n_heads", "nhead", "n_head", "heads", "head_count", "h")


def fixed_heads(net) -> set[int]:
    """The head counts the built modules hold (``num_heads``, ``n_heads``, ``h``...): read where no argument gave
    them, so that a model fixed at 8 heads is declared so, never run in the suite's h."""
    found = set()
    for module in net.modules():
        for attribute in HEAD_ATTRIBUTES:
            value = vars(module).get(attribute)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                found.add(value)
                break
    return found


def _table_reasons(net, config: ModelConfig) -> dict[str, str]:
    tables = len(split_tables(tables_of(parameters_of(net), config), config)[0])
    if config.share_embeddings and config.tie_output and tables == 1:
        return dict.fromkeys(("share_embeddings", "tie_output"), "one vocabulary and one table")
    share = ("one vocabulary: its tables are copies of one E" if config.share_embeddings and tables > 1
             else "one table for source and target" if config.share_embeddings
             else "separate source and target tables")
    tie = ("the output projection is the target table (the same tensor)" if config.tie_output
           else "the output projection is a matrix of its own")
    return {"share_embeddings": share, "tie_output": tie}


# --------------------------------------------------------------------------------------------------
# The draft
# --------------------------------------------------------------------------------------------------


def draft(spec: str) -> str:
    """The adapter source for ``spec`` (``module:Name``, a class or a factory function)."""
    return draft_for(*import_class(spec))


def draft_for(module_name: str, target) -> str:
    """The adapter source for ``target`` (a class or a factory function of the module ``module_name``), for its
    framework: a Flax or a Keras class by its helper (``draft_jax``, ``draft_keras``: imported only where the class's
    module imported that framework), anything else as PyTorch."""
    for package, helper in (("flax", "draft_jax"), ("keras", "draft_keras")):
        drafts = importlib.import_module(f"conformance.adapters.{helper}") if package in sys.modules else None
        if drafts is not None and getattr(drafts, f"is_{package}_class")(target):
            return drafts.draft(module_name, target)
    return draft_torch(module_name, target)


def draft_torch(module_name: str, target) -> str:
    """The adapter source for a PyTorch class or factory ``target`` of ``module_name``."""
    if inspect.isclass(target) and not is_module_class(target):
        raise ValueError(f"{target.__name__} is no nn.Module class; template --from drafts the adapter"
                         " of a PyTorch model: name its class, or a function that returns one")
    built = plan(target)
    net, config, failure = probe(built)
    if net is None:
        return render(module_name, target, built, Proposal(), {}, {}, model_calls(target, None), failure=failure)
    config = tying(net, built, config)
    config, inner = inner_width(parameters_of(net), built, config)
    proposal = propose(parameters_of(net), config)
    supports, reasons = limits(net, built, proposal, config)
    supports, reasons = {**inner[0], **supports}, {**inner[1], **reasons}
    proposal.guesses += position_guesses(net, proposal) + fixed_sizes(built)
    if torch_shifts_targets(net, config):
        proposal.guesses.append(SHIFTS_ITSELF)
    first = batch_axis(net, config)
    encode = _method(type(net), "encode")
    if first is None and encode is not None and len(_required(encode)) == 1:  # a stub's TODO states the layout
        proposal.guesses.append("batch_first=True assumed: encode could not be run on a probe to tell which axis of"
                                " its ids is the batch")
    return render(module_name, target, built, proposal, supports, reasons, model_calls(type(net), net),
                  batch_first=first is not False)


def position_guesses(net, proposal: Proposal) -> list[str]:
    """What load_weights will do to positional tables without a canonical name: set them to 0, which removes a
    sinusoid table kept as a frozen parameter (make it a buffer), and learned positions (the report lists them)."""
    from conformance.adapters.torch import has_identity

    guesses = []
    for path in proposal.unmapped:
        p = net.get_parameter(path)
        if p.dim() != 2 or not has_identity(net, path):
            continue
        if not p.requires_grad:
            guesses.append(f"{path} is a frozen table (requires_grad=False), fixed positions kept as a parameter:"
                           " load_weights sets it to 0, which removes them; make it a buffer in module(c)")
        else:
            guesses.append(f"{path}: learned positions; load_weights sets them to 0 (no positional encoding) and the"
                           " report lists them")
    return guesses


def batch_axis(net, config: ModelConfig) -> bool | None:
    """Whether the model's ``encode`` takes its ids batch first (True) or sequence first (False), told by what it
    does, not by a name: one token of sentence 0 changed, a batch-first encoder moves only row 0 of its output, a
    sequence-first one only column 0. None when encode cannot be run on the probe's ids, or neither holds."""
    import torch

    encode = _method(type(net), "encode")
    if encode is None or len(_required(encode)) != 1:
        return None
    first = max(config.pad_id, config.bos_id, config.eos_id) + 1
    ids = torch.arange(15).reshape(3, 5) % (config.src_vocab - first) + first
    changed = ids.clone()
    changed[0, 0] = first if int(ids[0, 0]) != first else first + 1
    try:
        with torch.no_grad():
            net.eval()
            moved = (net.encode(changed) - net.encode(ids)).abs()
    except Exception:  # noqa: BLE001 - an encode that wants more than ids: the draft cannot tell, and says so
        return None
    if moved.dim() != 3 or tuple(moved.shape[:2]) != (3, 5):
        return None
    where = moved.sum(-1) > 0
    if where[0].all() and not where[1:].any():
        return True
    if where[:, 0].all() and not where[:, 1:].any():
        return False
    return None


SHIFTS_ITSELF = ("decode seems to shift its targets right itself (no logits follow the last target token, those at"
                 " position 1 follow the first; or its future mask hides the diagonal): the suite passes targets"
                 " already shifted (BOS first) and wants the logits at i from the targets up to i; call the model in"
                 " a mode that does not shift (its step-by-step decoding mode), or give it the targets shifted left"
                 " (tgt_in[:, 1:] and one token more)")


def shifts_targets(run, config: ModelConfig) -> bool:
    """Whether ``run(tgt_in) -> logits (B, T, V)`` shifts its targets right itself (Flax's examples do, in training
    mode): told by what it does on the probe, never by a name: the last target token is read by no position, the
    first by the next one. False when it cannot be run or says nothing."""
    first = max(config.pad_id, config.bos_id, config.eos_id) + 1
    ids = np.arange(10).reshape(2, 5) % (config.tgt_vocab - first - 1) + first
    moved = []
    for column in (0, -1):
        changed = ids.copy()
        changed[:, column] = config.tgt_vocab - 1
        try:
            moved.append(np.abs(np.asarray(run(changed), np.float64) - np.asarray(run(ids), np.float64)).sum(-1))
        except Exception:  # noqa: BLE001 - a decode the probe cannot call: nothing to tell
            return False
    if moved[0].ndim != 2 or moved[0].shape != ids.shape:
        return False
    return bool(moved[0][:, 1].all()) and not moved[1].any()


def torch_shifts_targets(net, config: ModelConfig) -> bool:
    """``shifts_targets`` for a PyTorch model whose ``encode(src)`` and ``decode`` (its three in any order) run."""
    import torch

    encode, decode = _method(type(net), "encode"), _method(type(net), "decode")
    if encode is None or decode is None or len(_required(encode)) != 1:
        return False
    order = [_role(name) for name in _required(decode)]
    if sorted(order) != ["memory", "src", "tgt"]:
        return False
    src = torch.arange(6).reshape(2, 3) % (config.src_vocab - 4) + 4

    def run(tgt):
        with torch.no_grad():
            net.eval()
            given = {"tgt": torch.as_tensor(tgt), "memory": net.encode(src), "src": src}
            return net.decode(*(given[role] for role in order)).numpy()

    return shifts_targets(run, config)


def model_calls(cls, net) -> tuple[list[str], dict[str, str]]:
    """(functions the draft defines, TorchModel's keyword arguments ``{"encode": source}``) for the class's encode and
    decode: nothing where they fit TorchModel's defaults, a reordering lambda where decode takes its three in another
    order, else a function that raises NotImplementedError with a TODO saying what to write (naming the built
    model's encoder and decoder modules, ``net``, where it has them)."""
    functions, keywords = [], {}
    encode, decode = _method(cls, "encode"), _method(cls, "decode")
    if encode is None or len(_required(encode)) != 1:
        returns = "the encoder's output (B, S, d_model) for the token ids src (B, S)"
        functions += _stub(cls, net, "encode", "src", encode, returns)
        keywords["encode"] = "encode"
    order = [_role(name) for name in _required(decode)] if decode is not None else []
    if order != ["tgt", "memory", "src"]:
        if sorted(order) == ["memory", "src", "tgt"]:
            args = ", ".join({"tgt": "tgt_in", "memory": "memory", "src": "src"}[role] for role in order)
            keywords["decode"] = f"lambda m, tgt_in, memory, src: m.decode({args})"
        else:
            returns = "the logits (B, T, V) for tgt_in (B, T), memory (B, S, d_model) and src (B, S)"
            functions += _stub(cls, net, "decode", "tgt_in, memory, src", decode, returns)
            keywords["decode"] = "decode"
    return functions, keywords


def _method(cls, name: str):
    method = getattr(cls, name, None) if inspect.isclass(cls) else None
    return method if callable(method) else None


def _stub(cls, net, name: str, arguments: str, method, returns: str) -> list[str]:
    owner = getattr(cls, "__name__", "the model")
    has = (f"{owner}.{name}{inspect.signature(method)} needs more than {arguments}" if method is not None
           else f"{owner} has no {name}({arguments})")
    modules = _submodules(net)
    hint = f" (its modules: {modules})" if modules else ""
    todo = f"TODO {has}: return {returns}, as its forward computes it{hint}"
    raised = f"TODO {has}: write {name}(m, {arguments}) in the adapter"
    return [f"def {name}(m, {arguments}):", *_comment(todo, "    "),
            *_raise(raised, "    "), "", ""]


def _submodules(net) -> str:
    """The built model's encoder and decoder modules (outside the layers), as the stub's hint."""
    if net is None:
        return ""
    found = [path for path, _ in net.named_modules() if path and path.count(".") < 2 and not re.search(r"\d", path)
             and any(word in path.rpartition(".")[2].lower() for word in ("enc", "dec"))]
    return ", ".join(f"m.{path}" for path in found[:4])


def _required(method) -> list[str]:
    return [p.name for p in list(inspect.signature(method).parameters.values())[1:] if p.default is p.empty]


def _role(name: str) -> str:
    name = name.lower()
    if "mem" in name or "enc" in name:
        return "memory"
    return "src" if "src" in name or name in ("x", "source") else "tgt"


def _comment(text: str, indent: str) -> list[str]:
    """A comment, wrapped; continuation lines indented under the text after ``TODO``."""
    lines = textwrap.wrap(text, WIDTH - len(indent) - 2, break_on_hyphens=False)
    return [f"{indent}# {lines[0]}"] + [f"{indent}#      {line}" for line in
                                        textwrap.wrap(" ".join(lines[1:]), WIDTH - len(indent) - 7,
                                                      break_on_hyphens=False)]


def _raise(text: str, indent: str) -> list[str]:
    """``raise NotImplementedError("...")``, the message split into string literals that fit."""
    one = f"{indent}raise NotImplementedError({json.dumps(text)})"
    if len(one) <= WIDTH:
        return [one]
    chunks = textwrap.wrap(text, WIDTH - len(indent) - 12, drop_whitespace=False, break_on_hyphens=False)
    literals = [json.dumps(chunk) for chunk in chunks]
    return [f"{indent}raise NotImplementedError(", *[f"{indent}    {s}" for s in literals[:-1]],
            f"{indent}    {literals[-1]})"]


def construct(built: Plan, failure: str = "", *, torch: bool = True) -> tuple[list[str], str]:
    """(lines before the adapter, the adapter's first argument): a lambda with keyword arguments where one call with
    nothing to say builds the model, else a function ``module(c)`` that builds modules and config objects first, and
    raises NotImplementedError first while a TODO blocks building."""
    if built.simple and not failure:
        target = built.steps[0]
        return [], "\n".join(wrapped(f"    lambda c: {target.name}(", [a.render() for a in target.arguments],
                                     "), names=NAMES,"))
    lines = ["def module(c):"]
    blocking = built.blocking or [f"{built.steps[-1].name} could not be built from the suite's sizes ({failure}):"
                                  " make module(c) build it"] * bool(failure)
    for todo in blocking:
        lines += _comment(f"TODO {todo}", "    ")
    if failure and torch:  # a PyTorch module's name map, printed from the model module(c) builds
        lines += _comment("TODO then print its name map: from conformance.adapters.draft import PROBE; from"
                          " conformance.adapters.propose import propose_mapping;"
                          " print(propose_mapping(module(PROBE), PROBE).render())", "    ")
    elif failure:  # a JAX or Keras model: the draft reads it only when it builds
        lines += _comment("TODO then give the class defaults it builds with and run template --from again: the"
                          " draft reads the name map off the model it builds", "    ")
    if blocking:
        lines += _raise("TODO " + "; ".join(blocking), "    ")
    for i, step in enumerate(built.steps):
        if step.comment:
            lines += _comment(step.comment, "    ")
        for argument in (a for a in step.arguments if a.todo and not a.blocking):
            lines += _comment(f"TODO {argument.todo}", "    ")
        opening = f"    return {step.name}(" if i == len(built.steps) - 1 else f"    {step.variable} = {step.name}("
        lines += wrapped(opening, [a.render() for a in step.arguments], ")")
    return [*lines, "", ""], "    module, names=NAMES,"


def imports(module_name: str, built: Plan) -> list[str]:
    callees = [step.callee for step in built.steps]
    lines = ["from types import SimpleNamespace", ""] if SimpleNamespace in callees else []
    lines += ["from conformance import Conventions", "from conformance.adapters.torch import TorchAdapter"]
    names: dict[str, list[str]] = {}
    for callee in callees:
        if callee is SimpleNamespace:
            continue
        name = callee.__name__
        beside = getattr(sys.modules.get(module_name), name, None) is callee  # importable with the target
        names.setdefault(module_name if beside else callee.__module__, []).append(name)
    return lines + [""] + [f"from {home} import {', '.join(dict.fromkeys(found))}" for home, found in names.items()]


def attention_derived(proposal: Proposal) -> bool:
    """Whether the attention modules the draft found are the ones ``TorchAdapter`` derives from its name map
    (``conformance.adapters.names.attention_modules``): then the draft need not list them."""
    found, derived = NameMap(proposal.attention), NameMap(attention_modules(proposal.names))

    def module(names: NameMap, sublayer: str) -> str | None:
        hit = names.entry(sublayer)
        return None if hit is None else substitute(hit[1], hit[2])

    return all(module(found, s) == module(derived, s) for s in ("encoder.0.self_attn", "decoder.0.self_attn",
                                                               "decoder.0.cross_attn"))


def header(module_name: str, target, built: Plan, failure: str) -> list[str]:
    lines = [f'"""Adapter draft for {module_name}.{target.__name__}.', "",
             f"Written by `transformer-conformance template --from {module_name}:{target.__name__}` from the"
             " parameters' names",
             "and shapes. Resolve each TODO (docs/walkthrough.md says how), then certify it:",
             "    transformer-conformance certify my_adapter.py --json report.json --html report.html",
             "Add the parts your code has (positional_encoding=, encoder_layer=Component(...), ...):"
             " docs/walkthrough.md."]
    if failure:
        given = " (with None for the arguments its TODOs name)" if built.blocking else ""
        lines += ["", *textwrap.wrap(f"{target.__name__} could not be built from the suite's sizes{given} to read its"
                                     f" parameters: {failure}. This is the skeleton: NAMES is empty, and module(c)"
                                     " raises NotImplementedError until it builds the model.", WIDTH - 4)]
    elif built.blocking:
        lines += ["", *textwrap.wrap("module(c) raises NotImplementedError until the TODOs it names are resolved:"
                                     " certify reports the model's checks as not implemented, with that TODO. The"
                                     " name map was read off a model built with None for them.", WIDTH - 4)]
    return [*lines, '"""']


# What a draft cannot know: whether the code has a translator and a trainer of its own (the suite supplies the
# lesson's loop and the paper's recipe only when asked, and never credits them to the implementation).
SUPPLIED_HINT = ['# greedy decoding and a training step: your own (model={"greedy_decode": ..., "trainer": ...}), or',
                 '# the suite\'s, reported as the suite\'s and never credited to your code:',
                 '# supplied=("greedy_decode", "train_step"),']


def render(module_name: str, target, built: Plan, proposal: Proposal, supports, reasons,
           calls: tuple[list[str], dict[str, str]], failure: str = "", batch_first: bool = True) -> str:
    conventions = [f'mask="keep", batch_first={batch_first}, framework="torch",']
    if isinstance(proposal.names.get("E"), list):  # separate tables serve the shared E
        conventions.append("ties_embeddings=False,")
    if supports:
        conventions += [*wrapped("supports={", [f"{literal(k)}: {literal(v)}" for k, v in supports.items()], "},",
                                 WIDTH - 8),
                        "reasons={" + ",\n         ".join(f"{literal(k)}: {literal(v)}"
                                                            for k, v in reasons.items()) + "},"]
    conventions[-1] = conventions[-1].removesuffix(",") + "),"
    listed = not attention_derived(proposal)
    before, first = construct(built, failure)
    functions, keywords = calls
    arguments = ["conventions=Conventions("]
    arguments += [f"    {line}" for line in "\n".join(conventions).splitlines()]
    if listed:  # an option of TorchModel, where the name map does not derive the attention modules
        keywords = {"attention": "ATTENTION", **keywords}
    if keywords:
        arguments.append("model={" + ", ".join(f"{literal(k)}: {v}" for k, v in keywords.items()) + "},")
    arguments += SUPPLIED_HINT
    names = proposal.render(attention=listed) if not failure else "\n".join([
        "NAMES = {}  # TODO map the paper's weights to the module's parameters once it builds (see the top)"])
    return "\n".join([
        *header(module_name, target, built, failure),
        "",
        *imports(module_name, built),
        "",
        names,
        "",
        *(["", *before] if before else []),
        *functions,
        "adapter = TorchAdapter(",
        first,
        *[f"    {line}" for line in arguments],
        ")",
        "",
    ])


def wrapped(opening: str, arguments: list[str], closing: str, width: int = WIDTH) -> list[str]:
    """A call's source lines, arguments aligned after the opening parenthesis, none longer than ``width``."""
    lines, line = [], opening
    for i, argument in enumerate(arguments):
        piece = argument + (", " if i < len(arguments) - 1 else closing)
        if len(line) + len(piece.rstrip()) > width and line.strip() != opening.strip():
            lines.append(line.rstrip())
            line = " " * len(opening)
        line += piece
    return lines + [line] if arguments else [opening + closing]
