"""``transformer-conformance template --from module:Class``: an adapter draft for an ``nn.Module`` encoder-decoder.

The class is imported (from the current folder, as the adapter will import it), its constructor's parameters
are matched to the config by name, one small model is built with sizes that tell its parameters apart
(``PROBE``), and ``propose_mapping`` reads the name map off it. The draft is a whole adapter on
``conformance.adapters.torch.TorchModel``; what the class fixes itself (the LayerNorm epsilon, biases, one
vocabulary) becomes a declaration in ``Conventions.supports``, and what only a person can decide is a
``TODO`` line with the question. docs/walkthrough.md follows it from draft to report.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path

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


def constructor_arguments(cls) -> tuple[dict[str, str], list[str]]:
    """{parameter: config key} for the parameters recognised by name, and the required ones that are not."""
    matched, unknown = {}, []
    for parameter in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        key = next((k for k, names in SYNONYMS.items() if parameter.name in names), None)
        if key and key not in matched.values():
            matched[parameter.name] = key
        elif parameter.default is parameter.empty:
            unknown.append(parameter.name)
    return matched, unknown


def probe_model(cls, matched: dict[str, str]):
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return cls(**{name: getattr(PROBE, key) for name, key in matched.items()})


def draft(spec: str) -> str:
    """The adapter source for ``spec`` (``module:Class``)."""
    module_name, cls = import_class(spec)
    matched, unknown = constructor_arguments(cls)
    if unknown:
        raise ValueError(f"{cls.__name__}() needs {', '.join(unknown)}, which match no config key by name: build"
                         " one by hand or add defaults; docs/walkthrough.md shows the adapter to write")
    net = probe_model(cls, matched)
    one_vocabulary = "tgt_vocab" not in matched.values()
    config = PROBE.replace(tgt_vocab=PROBE.src_vocab, share_embeddings=True, tie_output=True) if one_vocabulary \
        else PROBE
    proposal = propose(parameters_of(net), config)
    supports, reasons = limits(net, matched, proposal)
    return render(module_name, cls, matched, proposal, supports, reasons, model_calls(cls))


def limits(net, matched: dict[str, str], proposal: Proposal) -> tuple[dict, dict]:
    """What the class fixes itself, as declarations: eps, biases, one vocabulary."""
    supports, reasons = {}, {}
    eps = {float(m.eps) for m in net.modules() if type(m).__name__ == "LayerNorm"}
    if "eps" not in matched.values() and len(eps) == 1:
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
    """TorchModel's keyword arguments for the class's encode/decode, and TODOs where they do not fit."""
    encode, decode = getattr(cls, "encode", None), getattr(cls, "decode", None)
    if encode is None or decode is None:
        return ["# TODO the class has no encode(src) and decode(tgt_in, memory, src): pass encode= and decode=",
                "#      callables (module first, then tensors) that run its encoder and its decoder"]
    calls = []
    if len(_required(encode)) != 1:
        calls.append(f"# TODO encode{inspect.signature(encode)}: pass encode=lambda m, src: m.encode(src, ...)")
    names = _required(decode)
    order = [_role(name) for name in names]
    if order != ["tgt", "memory", "src"]:
        if sorted(order) == ["memory", "src", "tgt"]:
            args = ", ".join({"tgt": "tgt_in", "memory": "memory", "src": "src"}[role] for role in order)
            calls.append(f"decode=lambda m, tgt_in, memory, src: m.decode({args}),")
        else:
            calls.append(f"# TODO decode{inspect.signature(decode)}: pass decode=lambda m, tgt_in, memory, src: ...")
    return calls


def _required(method) -> list[str]:
    return [p.name for p in list(inspect.signature(method).parameters.values())[1:] if p.default is p.empty]


def _role(name: str) -> str:
    name = name.lower()
    if "mem" in name or "enc" in name:
        return "memory"
    return "src" if "src" in name or name in ("x", "source") else "tgt"


def render(module_name: str, cls, matched, proposal: Proposal, supports, reasons, calls) -> str:
    arguments = [f'{name}=config["{key}"]' for name, key in matched.items()]
    conventions = ['mask="keep", batch_first=True, framework="torch",']
    if isinstance(proposal.names.get("E"), list):  # separate tables serve the shared E
        conventions.append("ties_embeddings=False,")
    if supports:
        conventions += ["supports={" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in supports.items()) + "},",
                        "reasons={" + ",\n         ".join(f"{literal(k)}: {literal(v)}"
                                                            for k, v in reasons.items()) + "},"]
    keywords = ["names=NAMES"] + (["attention=ATTENTION"] if proposal.attention else []) + ["seed=seed"]
    keywords += [call.rstrip(",") for call in calls if not call.startswith("#")]
    return "\n".join([
        f'"""Adapter draft for {module_name}.{cls.__name__}.',
        "",
        f"Written by `transformer-conformance template --from {module_name}:{cls.__name__}` from the parameters' names",
        "and shapes. Resolve each TODO (docs/walkthrough.md says how), then certify it:",
        "    transformer-conformance certify my_adapter.py --json report.json --html report.html",
        '"""',
        "",
        "from conformance import Conventions",
        "from conformance.adapters.torch import TorchModel, seeded",
        f"from {module_name} import {cls.__name__}",
        "",
        proposal.render(),
        "",
        "",
        "class Adapter:",
        "    conventions = Conventions(",
        *[f"        {line}" for line in "\n".join(conventions).splitlines()],
        "    )",
        "    model_class = TorchModel  # the model parts the suite may ask for",
        "",
        "    def build_model(self, config, seed):",
        "        with seeded(seed):",
        *wrapped(f"            net = {cls.__name__}(", arguments, ")"),
        *[f"        {call}" for call in calls if call.startswith("#")],
        *wrapped("        return TorchModel(", ["net", "config", *keywords], ")"),
        "",
        "",
        "adapter = Adapter()",
        "",
    ])


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
