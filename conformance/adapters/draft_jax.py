"""``transformer-conformance template --from module:Name`` for a Flax NNX class: an adapter draft on ``JaxAdapter``.

As for PyTorch (``draft``): the constructor is planned parameter by parameter from the suite's config (``construct``;
``rngs`` is the drafted function's second argument, ``nnx.Rngs`` seeded by the suite), one small model is built with
sizes that tell its parameters apart (``PROBE``), and ``propose`` reads the name map off its parameter pytree
(``conformance.adapters.jax.flatten``: ``encoder.0.attn.query.kernel``). Flax's kernels are (in, out), the canonical
orientation; a per-head kernel (Flax's ``MultiHeadAttention``: (d_model, h, d_k), its output (h, d_k, d_model)) is
proposed as the matrix its head axes merge into. What the model fixes becomes a declaration read off it, never
guessed: the LayerNorm epsilon (``nnx.LayerNorm.epsilon``), the attention's biases, one table or two, and whether
the output is the table itself (no output matrix: ``embed.attend``).
"""

from __future__ import annotations

import inspect
import re
import textwrap
from collections.abc import Callable

import numpy as np

from conformance.adapters.construct import PROBE, Plan, plan
from conformance.adapters.draft import (
    SHIFTS_ITSELF,
    WIDTH,
    construct,
    fixed_sizes,
    header,
    imports,
    shifts_targets,
    tying_of,
)
from conformance.adapters.names import NameMap
from conformance.adapters.propose import Parameter, Proposal, literal, propose
from conformance.config import ModelConfig


def is_flax_class(target) -> bool:
    """A Flax NNX or Flax Linen module class."""
    nnx = _nnx()
    return (nnx is not None and inspect.isclass(target) and issubclass(target, nnx.Module)) or is_linen_class(target)


def _nnx():
    try:
        from flax import nnx
    except ImportError:
        return None
    return nnx


def probe(built: Plan) -> tuple[object | None, ModelConfig, str]:
    """(the module, the config it was built with, why it could not be built); two vocabularies, else one."""
    nnx, failure = _nnx(), ""
    for config in (PROBE, PROBE.replace(tgt_vocab=PROBE.src_vocab)):
        try:
            return built.build(config, rngs=nnx.Rngs(0)), config, ""
        except Exception as exc:  # noqa: BLE001 - any error of the user's code: the draft says it and goes on
            failure = failure or f"{type(exc).__name__}: {exc}"
    return None, PROBE, failure


def parameters_of(module, config: ModelConfig) -> list[Parameter]:
    """Every parameter of a Flax NNX module by dotted path, in the order the modules assign their attributes (Flax's
    state sorts them by name; the order says which LayerNorm comes first), its shape as the matrix it stands for
    (per-head axes merged), and the class of the module that holds it."""
    from conformance.adapters.jax import flatten

    nnx = _nnx()
    owners = {".".join(str(k) for k in path): type(sub).__name__ for path, sub in nnx.iter_modules(module)}
    rank = {path: i for i, path in enumerate(assignment_order(module))}
    found = []
    for path, leaf in flatten(nnx.state(module, nnx.Param)).items():
        shape = tuple(np.shape(leaf))
        found.append(Parameter(path, merged_heads(shape, path.rpartition(".")[2], config),
                               owners.get(path.rpartition(".")[0], "")))
    return sorted(found, key=lambda p: rank.get(p.path, len(rank)))


def assignment_order(module, prefix: str = "") -> list[str]:
    """The dotted paths of a module's attributes, depth first, each module's in the order its code assigned them."""
    nnx, paths = _nnx(), []
    for name, value in vars(module).items():
        if name.startswith("_"):
            continue
        path = f"{prefix}{name}"
        paths.append(path)
        if isinstance(value, nnx.Module):
            paths += assignment_order(value, f"{path}.")
    return paths


def merged_heads(shape: tuple[int, ...], leaf: str, config: ModelConfig) -> tuple[int, ...]:
    """A per-head kernel's or bias's shape as its merged matrix or vector: (d, h, d_k) -> (d, d); (h, d_k, d) -> (d, d);
    (h, d_k) -> (d,)."""
    heads, d_k = config.h, config.d_model // config.h
    if leaf == "bias" and len(shape) == 2 and shape[0] == heads:
        return (shape[0] * shape[1],) if shape[1] == d_k else shape
    if len(shape) == 3 and shape[0] == heads:
        return (shape[0] * shape[1], shape[2]) if shape[1] == d_k else shape
    if len(shape) == 3:
        return (shape[0], shape[1] * shape[2]) if shape[1] == heads and shape[2] == d_k else shape
    return shape


def wide_heads(parameters: list[Parameter], config: ModelConfig) -> list[str]:
    """A guess for each attention whose per-head kernels are not d_model / h wide (Keras' ``MultiHeadAttention(key_dim=
    d_model)``, Flax's ``qkv_features`` set apart): left unmerged by ``merged_heads``, so never read as another
    matrix (a (d, 2d) fused W_KV), and named here, once per attention of the layers, with the reason no canonical
    weight fits it."""
    from conformance.adapters.propose import _generic

    d_k, found = config.d_model // config.h, {}
    for p in parameters:
        if len(p.shape) == 3:
            width = p.shape[1] if p.shape[0] == config.h else p.shape[2]
            found.setdefault(_generic(p.path).rpartition(".")[0].rpartition(".")[0], width)
    return [f"{attention}: heads {width} wide where the paper's are d_model / h = {d_k}: no canonical weight fits its"
            " kernels (it computes another attention, its scores scaled by its own width); map them by hand with the"
            " heads padded, or certify the parts the model has" for attention, width in found.items()]


def limits(module, proposal: Proposal, config: ModelConfig) -> tuple[dict, dict]:
    """What the built Flax module fixes, as ``supports`` and ``reasons``: read off it."""
    nnx = _nnx()
    epsilons = {float(sub.epsilon) for _, sub in nnx.iter_modules(module) if isinstance(sub, nnx.LayerNorm)}
    paths = list(flatten_params(module))
    return declared_limits(epsilons, "nnx.LayerNorm(epsilon={:g})", paths, proposal)


def flatten_params(module) -> dict:
    from conformance.adapters.jax import flatten

    nnx = _nnx()
    return flatten(nnx.state(module, nnx.Param))


def declared_limits(epsilons: set[float], norm: str, paths: list[str], proposal: Proposal) -> tuple[dict, dict]:
    """``supports`` and ``reasons`` from what a built model showed: its LayerNorms' epsilons (``norm``: how its code
    writes one), its attention's biases (by the name map over ``paths``), its tables."""
    supports, reasons = {}, {}
    if len(epsilons) == 1:
        (eps,) = epsilons
        supports["eps"], reasons["eps"] = (eps,), f"every LayerNorm is {norm.format(eps)}"
    biases = attention_biases(paths, proposal)
    if len(biases) == 1:
        supports["attention_bias"] = (biases[0],)
        reasons["attention_bias"] = f"the attention's projections {'always' if biases[0] else 'never'} carry biases"
    shared = "E" in proposal.names
    supports["share_embeddings"] = (shared,)
    reasons["share_embeddings"] = "one embedding table for both sides" if shared else "a table per side"
    tied = "W_out" not in proposal.names
    supports["tie_output"] = (tied,)
    reasons["tie_output"] = "the logits come from the target table itself" if tied else "an output matrix of its own"
    return supports, reasons


def attention_biases(paths: list[str], proposal: Proposal) -> list[bool]:
    """Whether each of the first layers' attention projections has a bias beside its kernel (by the name map)."""
    names, found = NameMap(proposal.names), set()
    for sublayer in ("encoder.0.self_attn", "decoder.0.self_attn", "decoder.0.cross_attn"):
        for x in "QKVO":
            try:
                found.add(bool(names.resolve([f"{sublayer}.b_{x}"], paths)))
            except ValueError:
                found.add(False)
    return sorted(found)


def draft(module_name: str, target) -> str:
    """The adapter source for a Flax NNX (or Linen: ``draft_linen``) class ``target`` of ``module_name``."""
    if is_linen_class(target):
        return draft_linen(module_name, target)
    built = plan(target)
    module, config, failure = probe(built)
    proposal = Proposal()
    supports: dict = {}
    reasons: dict = {}
    if module is not None:
        parameters = parameters_of(module, config)
        config = tying_of(parameters, built, config)
        proposal = propose(parameters, config)
        # Flax's kernels are x @ W: the PyTorch draft's note on raw square matrices does not apply
        proposal.guesses = [g for g in proposal.guesses if "outside nn.Linear" not in g]
        supports, reasons = limits(module, proposal, config)
        proposal.guesses += fixed_sizes(built) + wide_heads(parameters, config)
    return render(module_name, target, built, proposal, supports, reasons, failure)


# What a draft declares for each framework: the helper it is built on, its module, its Conventions, whether the
# construction takes the random streams.
KINDS = {"jax": ("JaxAdapter", "conformance.adapters.jax", 'framework="jax", arrays="jax"', True),
         "linen": ("LinenAdapter", "conformance.adapters.linen", 'framework="jax", arrays="jax"', False),
         "keras": ("KerasAdapter", "conformance.adapters.keras", 'framework="keras"', False)}


def render(module_name: str, target, built: Plan, proposal: Proposal, supports: dict, reasons: dict,
           failure: str, kind: str = "jax") -> str:
    helper, home, declared, rngs = KINDS[kind]
    before, first = construct(built, failure, torch=False)
    if rngs and "lambda c:" in first:  # one more argument: the continuation lines move with it
        head, *rest = first.replace("lambda c:", "lambda c, rngs:", 1).split("\n")
        first = "\n".join([head, *(" " * len(" rngs,") + line for line in rest)])
    if rngs:
        before = [line.replace("def module(c):", "def module(c, rngs):", 1) for line in before]
    conventions = [f'mask="keep", batch_first=True, {declared},']
    if supports:
        conventions += ["supports={" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in supports.items()) + "},",
                        "reasons={" + ",\n         ".join(f"{literal(k)}: {literal(v)}"
                                                            for k, v in reasons.items()) + "},"]
    conventions[-1] = conventions[-1].removesuffix(",") + "),"
    arguments = ["conventions=Conventions(", *[f"    {line}" for line in "\n".join(conventions).splitlines()]]
    functions, keywords = model_functions(target)
    arguments += [f"{key}={value}," for key, value in keywords.items()]
    arguments += ["# greedy decoding and a training step, if the model has them:",
                  "# greedy_decode=lambda module, src, max_len: ...,",
                  "# train_step=lambda module, src, tgt_in, tgt_out: ...,"]
    names = proposal.render(attention=False) if not failure else (
        "NAMES = {}  # TODO map the paper's weights to the module's parameters once it builds (see the top)")
    lines = header(module_name, target, built, failure)
    lines[0] = lines[0].replace('"""Adapter draft', f'"""Adapter draft ({FRAMEWORK_NAMES[kind]})')
    return "\n".join([
        *lines, "",
        *[f"from {home} import {helper}" if line == "from conformance.adapters.torch import TorchAdapter" else line
          for line in imports(module_name, built)],
        "",
        names,
        "",
        *(["", *before] if before else []),
        *functions,
        f"adapter = {helper}(",
        first,
        *[f"    {line}" for line in arguments],
        ")",
        "",
    ])


FRAMEWORK_NAMES = {"jax": "JAX, Flax NNX", "linen": "JAX, Flax Linen", "keras": "Keras 3"}


# The words a method's argument names say its role with: decode(encoded, inputs, targets) is (memory, src, tgt_in).
ROLE_WORDS = {"memory": ("memory", "encoded", "enc_out", "encoder_out", "encoder_output", "enc_output", "context",
                         "mem", "encoding", "enc"),
              "src": ("src", "source", "inputs", "input", "input_ids", "src_ids", "enc_input", "src_tokens"),
              "tgt_in": ("tgt", "target", "targets", "trg", "tgt_in", "dec_input", "decoder_input", "outputs",
                         "tgt_ids", "tgt_tokens", "y")}
PROTOCOL = {"encode": ("src",), "decode": ("tgt_in", "memory", "src")}


def _role(name: str) -> str | None:
    found = [role for role, words in ROLE_WORDS.items() if name.lower() in words]
    return found[0] if len(found) == 1 else None


def call_order(cls, name: str) -> tuple[str, ...] | None:
    """The protocol's arguments in the order ``cls.name`` takes them, read off its required arguments' names
    (``decode(encoded, inputs, targets)`` -> memory, src, tgt_in); None when it has not exactly those."""
    method = getattr(cls, name, None)
    if not callable(method):
        return None
    required = [p.name for p in list(inspect.signature(method).parameters.values())[1:]
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(required) == 1 and name == "encode":
        return ("src",)
    roles = tuple(_role(argument) for argument in required)
    return roles if sorted(r or "" for r in roles) == sorted(PROTOCOL[name]) else None


def model_functions(cls) -> tuple[list[str], dict[str, str]]:
    """Functions to write when the class has no ``encode(src)`` or ``decode(tgt_in, memory, src)`` of its own: its own
    method with the arguments in the order their names say, else a stub to write."""
    lines, keywords = [], {}
    for name, arguments in (("encode", "module, src"), ("decode", "module, tgt_in, memory, src")):
        order = call_order(cls, name)
        if order == PROTOCOL[name]:
            continue
        keywords[name] = name
        if order is not None:
            lines += [f"def {name}({arguments}):",
                      f"    # {cls.__name__}.{name} takes its arguments in another order (read off their names)",
                      f"    return module.{name}({', '.join(order)})", "", ""]
            continue
        lines += [f"def {name}({arguments}):",
                  *[f"    # {line}" for line in textwrap.wrap(
                      f"TODO {cls.__name__} has no {name}({arguments.partition(', ')[2]}): compute it with the"
                      f" module's own submodules ({'memory (B, S, d_model)' if name == 'encode' else 'logits'})",
                      WIDTH - 6)],
                  f'    raise NotImplementedError("TODO write {name}() in the adapter")', "", ""]
    return lines, keywords


# ------------------------------------------------------------------------------------------------------------------
# Flax Linen: parameters made by ``init``, named by Linen (``encoderblock_0.LayerNorm_1.scale``)
# ------------------------------------------------------------------------------------------------------------------


def _linen():
    try:
        from flax import linen
    except ImportError:
        return None
    return linen


def is_linen_class(target) -> bool:
    linen = _linen()
    return linen is not None and inspect.isclass(target) and issubclass(target, linen.Module)


NUMBERED = re.compile(r"_(\d+)(?=\.|$)")
RENUMBERED = re.compile(r"(?<=[A-Za-z])\.(\d+|\{l\})(?=\.|$)")
NUMBERED_MODULE = re.compile(r"[\w.{}]*[A-Za-z]\.(?:\d+|\{l\})[\w.{}]*")  # a numbered path inside a guess's text


def numbered(path: str) -> str:
    """Linen's ``encoderblock_0.LayerNorm_1`` as the drafts read layers and repeated modules: ``encoderblock.0.
    LayerNorm.1``."""
    return NUMBERED.sub(r".\1", path)


def linen_path(pattern: str) -> str:
    """A proposed path (or pattern with ``{l}``) back in Linen's spelling: ``encoderblock.{l}.LayerNorm.1.scale`` ->
    ``encoderblock_{l}.LayerNorm_1.scale``."""
    return RENUMBERED.sub(r"_\1", pattern)


def linen_functions(cls) -> tuple[Callable, Callable]:
    """encode(module, src) and decode(module, tgt_in, memory, src) for the probe: the class's own methods, their
    arguments put in the order their names say (``decode(encoded, inputs, targets)``), else its ``__call__``."""
    order = call_order(cls, "decode")
    if order is not None and call_order(cls, "encode") is not None:
        def decode(m, tgt_in, memory, src):
            given = {"tgt_in": tgt_in, "memory": memory, "src": src}
            return m.decode(*(given[role] for role in order))
        return (lambda m, src: m.encode(src)), decode
    # no methods to trace: the parameters come from __call__(src, tgt_in), the "memory" passed along being src
    return (lambda m, src: src), (lambda m, tgt_in, memory, src: m(memory, tgt_in))


def probe_linen(built: Plan):
    """(the module, its params, the config, the LayerNorm epsilons, each module's class by path, the failure)."""
    import jax

    from conformance.adapters.linen import initialise

    linen, failure = _linen(), ""
    encode, decode = linen_functions(built.steps[-1].callee)
    for config in (PROBE, PROBE.replace(tgt_vocab=PROBE.src_vocab)):
        epsilons, owners = set(), {}

        def record(next_fun, args, kwargs, context, epsilons=epsilons, owners=owners):
            module = context.module
            owners[".".join(module.path)] = type(module).__name__
            if isinstance(module, linen.LayerNorm):
                epsilons.add(float(module.epsilon))
            return next_fun(*args, **kwargs)

        try:
            module = built.build(config)
            with linen.intercept_methods(record):
                params = initialise(module, jax.random.key(0), config, encode, decode)
            return module, params, config, epsilons, owners, ""
        except Exception as exc:  # noqa: BLE001 - any error of the user's code: the draft says it and goes on
            failure = failure or f"{type(exc).__name__}: {exc}"
    return None, None, PROBE, set(), {}, failure


def in_creation_order(tree, prefix: str = ""):
    """(path, leaf) of a params dict in the order ``init`` made them (a dict keeps it; JAX's flattening sorts)."""
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if hasattr(value, "items"):
            yield from in_creation_order(value, f"{path}.")
        else:
            yield path, value


def draft_linen(module_name: str, target) -> str:
    """The adapter source for a Flax Linen class ``target`` of ``module_name``."""
    built = plan(target)
    module, params, config, epsilons, owners, failure = probe_linen(built)
    proposal, supports, reasons = Proposal(), {}, {}
    if module is not None:
        parameters = [Parameter(numbered(path), merged_heads(tuple(np.shape(leaf)), path.rpartition(".")[2], config),
                                owners.get(path.rpartition(".")[0], "")) for path, leaf in in_creation_order(params)]
        config = tying_of(parameters, built, config)
        proposal = propose(parameters, config)
        proposal.names = {key: linen_path(value) if isinstance(value, str) else value
                          for key, value in proposal.names.items()}
        proposal.unmapped = [linen_path(path) for path in proposal.unmapped]
        proposal.guesses = [NUMBERED_MODULE.sub(lambda m: linen_path(m.group(0)), g) for g in proposal.guesses]
        proposal.guesses = [g for g in proposal.guesses if "outside nn.Linear" not in g]  # x @ W kernels
        paths = [linen_path(p.path) for p in parameters]
        supports, reasons = declared_limits(epsilons, "nn.LayerNorm(epsilon={:g})", paths, proposal)
        proposal.guesses += fixed_sizes(built) + [linen_path(guess) for guess in wide_heads(parameters, config)]
        if shifts_targets(linen_decoding(module, params, built), config):
            proposal.guesses.append(SHIFTS_ITSELF)
    return render(module_name, target, built, proposal, supports, reasons, failure, kind="linen")


def linen_decoding(module, params, built: Plan) -> Callable:
    """tgt_in -> the logits of the probed Linen module, on a fixed source, as the draft's encode and decode call it."""
    encode, decode = linen_functions(built.steps[-1].callee)
    src = np.arange(6).reshape(2, 3) % 19 + 4
    return lambda tgt: module.apply({"params": params}, src, tgt, method=lambda m, s, t: decode(m, t, encode(m, s), s))
