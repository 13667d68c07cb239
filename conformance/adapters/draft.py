"""``transformer-conformance template --from module:Class``: an adapter draft for an ``nn.Module`` encoder-decoder.

The class is imported (from the current folder, as the adapter will import it), its constructor's parameters
are matched to the config by name, one small model is built with sizes that tell its parameters apart
(``PROBE``), and ``propose_mapping`` reads the name map off it. A constructor that takes one config object
(``Model(config)``, ``Model(cfg: MyConfig)``, ``Model(args)``) gets that object built from the suite's sizes:
an instance of the annotated class (or the model's ``config_class``, as Hugging Face models name it) with
its fields matched by name, else a ``SimpleNamespace`` holding the attributes the class read while it was
built (a TODO line says to check them). The draft is a whole adapter on
``conformance.adapters.torch.TorchAdapter``; what the class fixes itself (the LayerNorm epsilon, biases, one
vocabulary) becomes a declaration in ``Conventions.supports``, and what only a person can decide is a
``TODO`` line with the question. docs/walkthrough.md follows it from draft to report.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from conformance.adapters.names import NameMap, attention_modules, substitute
from conformance.adapters.propose import Proposal, literal, parameters_of, propose
from conformance.config import ModelConfig

# Sizes that differ from each other (d_ff is none of 2, 3, 4 x d_model), so shapes say which parameter is which.
PROBE = ModelConfig(src_vocab=23, tgt_vocab=29, d_model=16, h=2, d_ff=40, N=2, dropout=0.0, share_embeddings=False,
                    tie_output=False)
SYNONYMS = {
    "src_vocab": ("src_vocab", "src_vocab_size", "vocab_size", "vocab", "n_vocab", "ntoken", "num_tokens",
                  "input_vocab_size", "n_src_vocab"),
    "tgt_vocab": ("tgt_vocab", "tgt_vocab_size", "trg_vocab", "trg_vocab_size", "output_vocab_size", "n_tgt_vocab"),
    "d_model": ("d_model", "dim", "hidden_size", "hidden_dim", "emb_size", "embed_dim", "model_dim", "d_hidden"),
    "h": ("h", "n_heads", "nhead", "num_heads", "heads", "n_head", "num_attention_heads"),
    "d_ff": ("d_ff", "dim_feedforward", "d_inner", "ff_dim", "ffn_dim", "d_hid", "ffn_hidden", "intermediate_size"),
    "N": ("N", "n_layers", "num_layers", "layers", "n_layer", "depth", "num_encoder_layers", "num_decoder_layers"),
    "dropout": ("dropout", "p_drop", "dropout_rate", "drop_prob", "p_dropout"),
    "eps": ("eps", "layer_norm_eps", "norm_eps", "ln_eps"),
    "pad_id": ("pad_id", "pad_idx", "padding_idx", "pad_token_id", "pad_index", "src_pad_idx"),
    "attention_bias": ("attention_bias", "qkv_bias", "bias", "use_bias"),
}
# Hugging Face's and fairseq's spellings, read from a config object only (never a constructor's own argument).
CONFIG_SYNONYMS = {
    "N": ("num_hidden_layers", "encoder_layers", "decoder_layers", "num_encoder_layers", "num_decoder_layers"),
    "d_ff": ("encoder_ffn_dim", "decoder_ffn_dim", "ffn_embed_dim", "encoder_ffn_embed_dim", "decoder_ffn_embed_dim"),
    "d_model": ("encoder_embed_dim", "decoder_embed_dim", "n_embd"),
    "h": ("encoder_attention_heads", "decoder_attention_heads", "attention_heads"),
    "dropout": ("attention_dropout", "hidden_dropout_prob", "attention_probs_dropout_prob", "resid_pdrop",
                "activation_dropout"),
    "eps": ("layer_norm_epsilon",),
    "src_vocab": ("V",),
}
# The names a constructor's one config object goes by.
CONFIG_WORDS = ("config", "cfg", "args", "opt", "opts", "conf", "hparams", "params", "options", "model_config")


@dataclass
class Construction:
    """How the draft builds the class: keyword arguments ``{parameter: config key}``, or one config object
    passed as ``holder``, of class ``holder_class`` (None: a SimpleNamespace), with ``fields``
    ``{attribute: config key}``."""

    arguments: dict[str, str] = field(default_factory=dict)
    holder: str | None = None
    holder_class: type | None = None
    fields: dict[str, str] = field(default_factory=dict)

    @property
    def keys(self) -> set[str]:
        """The config keys the class receives."""
        return set((self.fields if self.holder else self.arguments).values())


def config_key(name: str, *, in_object: bool = False) -> str | None:
    """The config key a parameter or attribute name stands for, if any."""
    tables = [SYNONYMS, CONFIG_SYNONYMS] if in_object else [SYNONYMS]
    return next((k for table in tables for k, names in table.items() if name in names), None)


def import_class(spec: str):
    """``module:Class`` or ``path/to/file.py:Class``, imported with the current folder on the path."""
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
    return location, getattr(module, name)


def constructor_arguments(cls, *, in_object: bool = False) -> tuple[dict[str, str], list[str]]:
    """{parameter: config key} for the parameters recognised by name, and the required ones that are not
    (``in_object``: the parameters of a config object's class, which may spell them as Hugging Face does)."""
    matched, unknown = {}, []
    for parameter in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        key = config_key(parameter.name, in_object=in_object)
        if key and (in_object or key not in matched.values()):  # a config object holds every spelling
            matched[parameter.name] = key
        elif parameter.default is parameter.empty:
            unknown.append(parameter.name)
    return matched, unknown


def config_parameter(cls) -> tuple[str, type | None] | None:
    """(name, class or None) of the one config object the constructor takes, if it takes one: its only
    required parameter, named like a config (``CONFIG_WORDS``) or annotated with a class; the class is the
    annotation, else the model's ``config_class`` (Hugging Face), else None (a SimpleNamespace will do)."""
    try:
        signature = inspect.signature(cls.__init__, eval_str=True)
    except (NameError, TypeError, SyntaxError):  # an annotation that does not evaluate here
        signature = inspect.signature(cls.__init__)
    parameters = [p for p in list(signature.parameters.values())[1:]
                  if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    required = [p for p in parameters if p.default is p.empty]
    if len(required) != 1 or config_key(required[0].name):
        return None
    parameter = required[0]
    annotation = parameter.annotation if isinstance(parameter.annotation, type) \
        and parameter.annotation is not parameter.empty else None
    if annotation in (int, float, str, bool, dict, list, tuple) or (
            annotation is None and parameter.name.lower() not in CONFIG_WORDS):
        return None
    holder_class = annotation or getattr(cls, "config_class", None)
    return parameter.name, holder_class if isinstance(holder_class, type) else None


def construction(cls) -> Construction:
    """How to build ``cls`` from the suite's config; ValueError naming what matches nothing."""
    holder = config_parameter(cls)
    if holder is None:
        matched, unknown = constructor_arguments(cls)
        if unknown:
            raise ValueError(f"{cls.__name__}() needs {', '.join(unknown)}, which match no config key by name: build"
                             " one by hand or add defaults; docs/walkthrough.md shows the adapter to write")
        return Construction(arguments=matched)
    name, holder_class = holder
    if holder_class is None:
        return Construction(holder=name, fields=read_attributes(cls))
    fields, unknown = constructor_arguments(holder_class, in_object=True)
    if unknown:
        raise ValueError(f"{cls.__name__}({name}: {holder_class.__name__}): {holder_class.__name__}() needs"
                         f" {', '.join(unknown)}, which match no config key by name: build it by hand or add defaults")
    return Construction(holder=name, holder_class=holder_class, fields=fields)


class _Recording(SimpleNamespace):
    """Every spelling of every config key, with the probe's value; remembers which ones were read."""

    def __init__(self):
        values = {name: getattr(PROBE, key) for table in (CONFIG_SYNONYMS, SYNONYMS) for key, names in table.items()
                  for name in names}
        super().__init__(**values)
        object.__setattr__(self, "_read", [])

    def __getattribute__(self, name):
        if not name.startswith("_") and name in object.__getattribute__(self, "__dict__"):
            object.__getattribute__(self, "_read").append(name)
        return object.__getattribute__(self, name)


def read_attributes(cls) -> dict[str, str]:
    """{attribute: config key} of the attributes ``cls`` reads from its config object while it is built."""
    import torch

    recording = _Recording()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        try:
            cls(recording)
        except AttributeError as exc:
            raise ValueError(f"{cls.__name__}() reads {exc.name or exc} from its config object, which matches no"
                             " config key by name: build the model by hand or annotate the parameter with the"
                             " config class") from exc
    read = dict.fromkeys(recording._read)
    return {name: config_key(name, in_object=True) for name in read}


def probe_model(cls, built: Construction):
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        if built.holder is None:
            return cls(**{name: getattr(PROBE, key) for name, key in built.arguments.items()})
        values = {name: getattr(PROBE, key) for name, key in built.fields.items()}
        return cls(built.holder_class(**values) if built.holder_class else SimpleNamespace(**values))


def draft(spec: str) -> str:
    """The adapter source for ``spec`` (``module:Class``)."""
    module_name, cls = import_class(spec)
    built = construction(cls)
    net = probe_model(cls, built)
    matched = {name: key for name, key in (built.fields if built.holder else built.arguments).items()}
    one_vocabulary = "tgt_vocab" not in matched.values()
    config = PROBE.replace(tgt_vocab=PROBE.src_vocab, share_embeddings=True, tie_output=True) if one_vocabulary \
        else PROBE
    proposal = propose(parameters_of(net), config)
    supports, reasons = limits(net, matched, proposal)
    return render(module_name, cls, built, proposal, supports, reasons, model_calls(cls))


def limits(net, matched: dict[str, str], proposal: Proposal) -> tuple[dict, dict]:
    """What the class fixes itself, as declarations: eps, biases, one vocabulary."""
    supports, reasons = {}, {}
    eps = {float(m.eps) for m in net.modules() if type(m).__name__ == "LayerNorm"}
    if len(eps) == 1 and ("eps" not in matched.values() or eps != {PROBE.eps}):  # not given, or given and ignored
        supports["eps"], reasons["eps"] = (eps.pop(),), "the LayerNorms' eps is fixed in the implementation"
    if "attention_bias" not in matched.values():
        biased = any(key.endswith(("b_QKV", "b_Q")) for key in proposal.names) or _linear_biases(net)
        supports["attention_bias"] = (biased,)
        reasons["attention_bias"] = f"the projections {'always' if biased else 'never'} carry biases"
    if "tgt_vocab" not in matched.values():
        supports["share_embeddings"] = supports["tie_output"] = (True,)
        reasons["share_embeddings"] = reasons["tie_output"] = "one vocabulary and one table"
    elif "W_out" not in proposal.names:
        supports["tie_output"], reasons["tie_output"] = (True,), "the output projection is the target table"
    return supports, reasons


def _linear_biases(net) -> bool:
    return any(type(m).__name__ == "Linear" and m.bias is not None for m in net.modules())


def model_calls(cls) -> list[str]:
    """TorchModel's keyword arguments for the class's encode/decode (``model=`` of ``TorchAdapter``), and TODOs
    where they do not fit."""
    encode, decode = getattr(cls, "encode", None), getattr(cls, "decode", None)
    if encode is None or decode is None:
        return ["# TODO the class has no encode(src) and decode(tgt_in, memory, src): pass model={\"encode\": ...,",
                "#      \"decode\": ...}, callables (module first, then tensors) that run its encoder and its decoder"]
    calls = []
    if len(_required(encode)) != 1:
        calls.append(f"# TODO encode{inspect.signature(encode)}: pass"
                     " model={\"encode\": lambda m, src: m.encode(src, ...)}")
    names = _required(decode)
    order = [_role(name) for name in names]
    if order != ["tgt", "memory", "src"]:
        if sorted(order) == ["memory", "src", "tgt"]:
            args = ", ".join({"tgt": "tgt_in", "memory": "memory", "src": "src"}[role] for role in order)
            calls.append(f"decode=lambda m, tgt_in, memory, src: m.decode({args}),")
        else:
            calls.append(f"# TODO decode{inspect.signature(decode)}: pass"
                         " model={\"decode\": lambda m, tgt_in, memory, src: ...}")
    return calls


def _required(method) -> list[str]:
    return [p.name for p in list(inspect.signature(method).parameters.values())[1:] if p.default is p.empty]


def _role(name: str) -> str:
    name = name.lower()
    if "mem" in name or "enc" in name:
        return "memory"
    return "src" if "src" in name or name in ("x", "source") else "tgt"


def construct(cls, built: Construction) -> list[str]:
    """How the module is built from the suite's config ``c`` (a ``ModelConfig``): a lambda with keyword arguments
    (the adapter's first line), or a function ``module(c)`` building the config object first (before the adapter)."""
    if built.holder is None:
        arguments = [f"{n}=c.{k}" for n, k in built.arguments.items()]
        return wrapped(f"    lambda c: {cls.__name__}(", arguments, "), names=NAMES,")
    fields = [f"{n}=c.{k}" for n, k in built.fields.items()]
    if built.holder_class is None:
        lines = [f"    # TODO {cls.__name__}({built.holder}) takes a config object: these are the attributes it read"
                 " while it was", "    #      built, from the suite's sizes; add any it reads later"]
        opening = "    model_config = SimpleNamespace("
    else:
        lines = [f"    # {cls.__name__}({built.holder}) takes a config object: built here from the suite's sizes"]
        opening = f"    model_config = {built.holder_class.__name__}("
    return ["def module(c):", *lines, *wrapped(opening, fields, ")"), f"    return {cls.__name__}(model_config)"]


def imports(module_name: str, cls, built: Construction) -> list[str]:
    lines = ["from types import SimpleNamespace", ""] if built.holder and built.holder_class is None else []
    lines += ["from conformance import Conventions", "from conformance.adapters.torch import TorchAdapter"]
    names = {module_name: [cls.__name__]}
    if built.holder_class is not None:
        home, name = built.holder_class.__module__, built.holder_class.__name__
        beside = getattr(sys.modules.get(module_name), name, None) is built.holder_class  # importable with the class
        names.setdefault(module_name if beside else home, []).append(name)
    return lines + [f"from {home} import {', '.join(dict.fromkeys(found))}" for home, found in names.items()]


def attention_derived(proposal: Proposal) -> bool:
    """Whether the attention modules the draft found are the ones ``TorchAdapter`` derives from its name map
    (``conformance.adapters.names.attention_modules``): then the draft need not list them."""
    found, derived = NameMap(proposal.attention), NameMap(attention_modules(proposal.names))

    def module(names: NameMap, sublayer: str) -> str | None:
        hit = names.entry(sublayer)
        return None if hit is None else substitute(hit[1], hit[2])

    return all(module(found, s) == module(derived, s) for s in ("encoder.0.self_attn", "decoder.0.self_attn",
                                                               "decoder.0.cross_attn"))


def render(module_name: str, cls, built: Construction, proposal: Proposal, supports, reasons, calls) -> str:
    conventions = ['mask="keep", batch_first=True, framework="torch",']
    if isinstance(proposal.names.get("E"), list):  # separate tables serve the shared E
        conventions.append("ties_embeddings=False,")
    if supports:
        conventions += ["supports={" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in supports.items()) + "},",
                        "reasons={" + ",\n         ".join(f"{literal(k)}: {literal(v)}"
                                                            for k, v in reasons.items()) + "},"]
    conventions[-1] = conventions[-1].removesuffix(",") + "),"
    listed = not attention_derived(proposal)
    built_by = construct(cls, built)
    keywords = (["attention=ATTENTION,"] if listed else []) + ["conventions=Conventions("]
    keywords += [f"    {line}" for line in "\n".join(conventions).splitlines()]
    model = [call.rstrip(",") for call in calls if not call.startswith("#")]
    keywords += [f"model={{{', '.join(_keyword(call) for call in model)}}}," for _ in model[:1]]
    keywords += [call for call in calls if call.startswith("#")]
    return "\n".join([
        f'"""Adapter draft for {module_name}.{cls.__name__}.',
        "",
        f"Written by `transformer-conformance template --from {module_name}:{cls.__name__}` from the parameters' names",
        "and shapes. Resolve each TODO (docs/walkthrough.md says how), then certify it:",
        "    transformer-conformance certify my_adapter.py --json report.json --html report.html",
        "Add the parts your code has (positional_encoding=, encoder_layer=Component(...), ...): docs/walkthrough.md.",
        '"""',
        "",
        *imports(module_name, cls, built),
        "",
        proposal.render(attention=listed),
        "",
        *([] if built.holder is None else ["", *built_by, "", ""]),
        "adapter = TorchAdapter(",
        *(built_by if built.holder is None else ["    module, names=NAMES,"]),
        *[f"    {line}" for line in keywords],
        ")",
        "",
    ])


def _keyword(call: str) -> str:
    """``decode=lambda ...`` -> ``"decode": lambda ...``."""
    name, _, value = call.partition("=")
    return f"{literal(name)}: {value}"


def wrapped(opening: str, arguments: list[str], closing: str, width: int = 116) -> list[str]:
    """A call's source lines, arguments aligned after the opening parenthesis, none longer than ``width``."""
    lines, line = [], opening
    for i, argument in enumerate(arguments):
        piece = argument + (", " if i < len(arguments) - 1 else closing)
        if len(line) + len(piece.rstrip()) > width and line.strip() != opening.strip():
            lines.append(line.rstrip())
            line = " " * len(opening)
        line += piece
    return lines + [line]
