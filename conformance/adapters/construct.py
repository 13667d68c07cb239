"""How ``template --from`` builds a class or factory from the suite's config ``c`` (a ``ModelConfig``): a ``Plan``.

Each parameter of the constructor (or function) becomes an argument: a config key when its name is one of the key's
spellings (``SYNONYMS``: ``vocab_size``, ``n_heads``, ``dim_feedforward``, ``src_pad_idx``, ...), ``c.d_model // c.h``
for a head's size, ``"cpu"`` for a device, 1024 for a maximum length (a TODO says to check it), a module built first
for a parameter annotated with an ``nn.Module`` class (``encoder: Encoder``) or, unannotated, named like a class of
the same module (a TODO says so), a config object built first from its own fields (``cfg: MyConfig``, a Hugging
Face model's ``config_class``, or a ``SimpleNamespace`` of the attributes the class read while it was built).
A parameter with a default that none of these names keeps its default; a required one becomes a blocking TODO:
the drafted ``module(c)`` raises ``NotImplementedError`` with its text until a person gives its value.

Pure Python; torch is imported only to tell an ``nn.Module`` class and to build the probe.
"""

from __future__ import annotations

import ast
import inspect
import sys
from dataclasses import dataclass, field
from types import SimpleNamespace

from conformance.config import ModelConfig

# Sizes that differ from each other (d_ff is none of 2, 3, 4 x d_model), so shapes say which parameter is which.
PROBE = ModelConfig(src_vocab=23, tgt_vocab=29, d_model=16, h=2, d_ff=40, N=2, dropout=0.0, share_embeddings=False,
                    tie_output=False)
SYNONYMS = {
    "src_vocab": ("src_vocab", "src_vocab_size", "vocab_size", "vocab", "n_vocab", "ntoken", "num_tokens",
                  "input_vocab_size", "n_src_vocab", "input_dim", "enc_voc_size", "source_vocab_size",
                  "src_vocab_len", "i_vocab_size", "src_n_vocab", "n_src_tokens"),
    "tgt_vocab": ("tgt_vocab", "tgt_vocab_size", "trg_vocab", "trg_vocab_size", "output_vocab_size", "n_tgt_vocab",
                  "n_trg_vocab", "output_dim", "dec_voc_size", "target_vocab_size", "tgt_vocab_len", "t_vocab_size",
                  "tgt_n_vocab", "n_tgt_tokens"),
    "d_model": ("d_model", "dim", "hidden_size", "hidden_dim", "emb_size", "embed_dim", "model_dim", "d_hidden",
                "hid_dim", "model_dimension", "d_word_vec", "embedding_dim", "emb_dim", "embed_size", "d_embed",
                "qkv_dim", "qkv_features"),
    "h": ("h", "n_heads", "nhead", "num_heads", "heads", "n_head", "num_attention_heads", "number_of_heads"),
    "d_ff": ("d_ff", "dim_feedforward", "d_inner", "ff_dim", "ffn_dim", "d_hid", "ffn_hidden", "intermediate_size",
             "pf_dim", "dim_ff", "ff_size", "ffn_size", "d_ffn", "feedforward_dim", "filter_size", "mlp_dim", "dff",
             "mlp_size", "mlp_hidden_dim", "intermediate_dim", "dense_dim", "latent_dim"),
    "N": ("N", "n_layers", "num_layers", "layers", "n_layer", "depth", "num_encoder_layers", "num_decoder_layers",
          "number_of_layers", "n_enc_layers", "n_dec_layers", "enc_layers", "dec_layers"),
    "dropout": ("dropout", "p_drop", "dropout_rate", "drop_prob", "p_dropout", "dropout_probability",
                "dropout_prob"),
    "eps": ("eps", "layer_norm_eps", "norm_eps", "ln_eps"),
    "pad_id": ("pad_id", "pad_idx", "padding_idx", "pad_token_id", "pad_index", "src_pad_idx", "trg_pad_idx",
               "tgt_pad_idx", "src_pad_id", "tgt_pad_id"),
    "bos_id": ("bos_id", "bos_idx", "sos_idx", "trg_sos_idx", "bos_token_id", "decoder_start_token_id"),
    "eos_id": ("eos_id", "eos_idx", "eos_token_id", "trg_eos_idx"),
    "attention_bias": ("attention_bias", "qkv_bias", "bias", "use_bias"),
}
# A constructor's switches that tie or untie the tables (§3.4 shares one matrix between both embeddings and the
# pre-softmax projection). The draft builds with the switch as given and declares what that build does: the name map
# read off one build would not fit the other.
TYING_SYNONYMS = {
    "share_embeddings": ("share_embeddings", "shared_embeddings", "share_emb", "share_embedding",
                         "emb_src_trg_weight_sharing", "share_all_embeddings", "tie_embeddings", "share_vocab",
                         "shared_vocab", "share_src_tgt_emb", "share_encoder_decoder_embeddings"),
    "tie_output": ("tie_output", "tie_weights", "trg_emb_prj_weight_sharing", "logits_via_embedding",
                   "share_decoder_embeddings", "tie_word_embeddings", "share_decoder_input_output_embed",
                   "weight_tying", "tie_emb_prj", "share_output_embeddings"),
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
# The size of one head, whatever a constructor calls it.
HEAD_SIZE = "c.d_model // c.h"
DERIVED = dict.fromkeys(("d_k", "d_v", "head_dim", "d_head", "dim_head", "head_size", "d_kv", "dim_per_head"),
                        HEAD_SIZE)
# Flax NNX modules take their random streams as ``rngs``: the drafted function receives them (``module(c, rngs)``).
RNGS = "rngs"
# A maximum length no config key gives: the suite's sequences are far shorter.
LENGTH_NAMES = ("max_len", "max_length", "max_seq_len", "max_seq_length", "n_position", "n_positions", "max_positions",
                "max_position_embeddings", "seq_len", "block_size", "max_src_len", "max_tgt_len", "context_length",
                "max_sequence_length", "maxlen", "sequence_length", "seq_length")
LONGEST = 1024
# A name with one of these words is one side's: num_encoder_layers and num_decoder_layers both take c.N.
SIDE_WORDS = ("src", "tgt", "trg", "enc", "dec", "encoder", "decoder", "source", "target")
# The names a constructor's one config object goes by.
CONFIG_WORDS = ("config", "cfg", "args", "opt", "opts", "conf", "hparams", "params", "options", "model_config")
SCALARS = (int, float, str, bool, dict, list, tuple)


@dataclass
class Argument:
    """One argument of a call: its parameter's name and its value as Python source, in ``c`` and the variables built
    before; ``todo``: what a person must check, or (``blocking``) give."""

    name: str
    source: str
    todo: str = ""
    blocking: bool = False
    positional: bool = False
    keyword_only: bool = False

    def render(self) -> str:
        return self.source if self.positional else f"{self.name}={self.source}"


@dataclass
class Step:
    """``variable = callee(arguments)``; ``comment``: a line the draft writes above it."""

    variable: str
    callee: object
    arguments: list[Argument] = field(default_factory=list)
    comment: str = ""

    @property
    def name(self) -> str:
        return getattr(self.callee, "__name__", str(self.callee))


@dataclass
class Plan:
    """The calls that build the model from ``c``, in order: modules and config objects first, the model last."""

    steps: list[Step]

    @property
    def arguments(self) -> list[Argument]:
        return [argument for step in self.steps for argument in step.arguments]

    @property
    def keys(self) -> set[str]:
        """The config keys the model receives."""
        return {a.source[2:] for a in self.arguments if a.source.startswith("c.") and a.source != HEAD_SIZE}

    @property
    def blocking(self) -> list[str]:
        return [a.todo for a in self.arguments if a.blocking]

    @property
    def simple(self) -> bool:
        """One call, nothing to say: the draft's construction is a lambda."""
        return len(self.steps) == 1 and not any(a.todo for a in self.arguments) and not self.steps[0].comment

    def build(self, config: ModelConfig, **given):
        """The model, built from ``config`` as the drafted code builds it (blocking arguments are None); ``given``:
        the variables the drafted function receives besides ``c`` (``rngs`` for a Flax module)."""
        variables: dict[str, object] = dict(given)
        for step in self.steps:
            values = {a.name: value_of(a.source, config, variables) for a in step.arguments}
            positional = [values.pop(a.name) for a in step.arguments if a.positional]
            variables[step.variable] = step.callee(*positional, **values)
        return variables[self.steps[-1].variable]


def value_of(source: str, config: ModelConfig, variables: dict):
    """The value of an argument's source: a variable, ``c.key``, the head size, or a literal."""
    if source in variables:
        return variables[source]
    if source == HEAD_SIZE:
        return config.d_model // config.h
    if source.startswith("c."):
        return getattr(config, source[2:])
    return ast.literal_eval(source)


def config_key(name: str, *, in_object: bool = False) -> str | None:
    """The config key a parameter or attribute name stands for, if any."""
    tables = [SYNONYMS, CONFIG_SYNONYMS] if in_object else [SYNONYMS]
    return next((k for table in tables for k, names in table.items() if name in names), None)


def call_parameters(callee) -> list[inspect.Parameter]:
    """The parameters a class's constructor (without self) or a function takes, annotations evaluated where they
    can be; ``*args`` and ``**kwargs`` left out."""
    function = callee.__init__ if inspect.isclass(callee) else callee
    try:
        signature = inspect.signature(function, eval_str=True)
    except (NameError, TypeError, SyntaxError, AttributeError):  # an annotation that does not evaluate here
        signature = inspect.signature(function)
    parameters = list(signature.parameters.values())[1 if inspect.isclass(callee) else 0:]
    return [p for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _annotation(parameter: inspect.Parameter, callee=None) -> type | None:
    """The class a parameter is annotated with; a string annotation (``from __future__ import annotations``, a
    dataclass's fields) is looked up among the names of the callee's module."""
    annotation = parameter.annotation
    if isinstance(annotation, str) and callee is not None:
        home = sys.modules.get(getattr(callee, "__module__", ""), None)
        annotation = getattr(home, annotation, None) if home is not None and annotation.isidentifier() else None
    return annotation if isinstance(annotation, type) and annotation is not parameter.empty else None


def is_module_class(value) -> bool:
    from torch import nn

    return isinstance(value, type) and issubclass(value, nn.Module) and value is not nn.Module


def is_bare_module(value) -> bool:
    """``nn.Module`` itself: an annotation that says a module goes there, not which."""
    from torch import nn

    return value is nn.Module


# Annotations that name a kind of value, never a config to build (``dtype: Any``, ``kernel_init: Callable``).
LIBRARY_MODULES = ("typing", "collections", "abc", "builtins", "numpy", "jax", "jaxlib", "enum", "types")


def _library_type(annotation: type) -> bool:
    return inspect.isabstract(annotation) or annotation.__module__.split(".")[0] in LIBRARY_MODULES


def config_object(parameter: inspect.Parameter, callee, required: list[inspect.Parameter]):
    """The config object a parameter takes, if it takes one: its annotated class (a dataclass, a config class), the
    model's ``config_class`` (Hugging Face) for a parameter named like a config, or ``SimpleNamespace`` for one named
    like a config that is the only required parameter (its attributes read while the class is built); else None."""
    annotation = _annotation(parameter, callee)
    if annotation is not None:
        return None if annotation in SCALARS or is_module_class(annotation) or is_bare_module(annotation) \
            or _library_type(annotation) else annotation
    if parameter.name.lower() not in CONFIG_WORDS or config_key(parameter.name):
        return None
    holder = getattr(callee, "config_class", None)
    if isinstance(holder, type):
        return holder
    return SimpleNamespace if [p.name for p in required] == [parameter.name] and inspect.isclass(callee) else None


def module_class(parameter: inspect.Parameter, callee) -> tuple[type | None, str]:
    """The ``nn.Module`` class a parameter takes: its annotation, else (a guess, said in the TODO) the class of the
    callee's module whose name is the parameter's (``encoder`` -> ``Encoder``)."""
    annotation = _annotation(parameter, callee)
    if annotation is not None and not is_bare_module(annotation):
        return (annotation, "") if is_module_class(annotation) else (None, "")
    home = sys.modules.get(getattr(callee, "__module__", ""), None)
    wanted = parameter.name.replace("_", "").lower()
    found = next((value for key, value in vars(home).items() if key.lower() == wanted and is_module_class(value)),
                 None) if home else None
    if found is None:
        return None, ""
    said = "is annotated nn.Module" if annotation is not None else "has no annotation"
    return found, (f"{_name(callee)}({parameter.name}) {said}: built as {found.__name__}, the class of that"
                   f" name in {home.__name__}; check it is the one")


def _name(callee) -> str:
    return getattr(callee, "__name__", str(callee))


class Planner:
    """Builds a ``Plan``: each call's arguments, the modules and config objects it needs built first."""

    def __init__(self):
        self.steps: list[Step] = []

    def plan(self, target) -> Plan:
        self.call(target, "model")
        return Plan(self.steps)

    def variable(self, wanted: str) -> str:
        taken = {step.variable for step in self.steps}
        return next(name for name in (wanted, *(f"{wanted}_{i}" for i in range(2, 99))) if name not in taken)

    def call(self, callee, variable: str, *, in_object: bool = False, depth: int = 0) -> Step:
        parameters = call_parameters(callee)
        required = [p for p in parameters if p.default is p.empty]
        arguments, used = [], set()
        for parameter in parameters:
            argument = self.argument(parameter, callee, required, used, in_object=in_object, depth=depth)
            if argument is not None:
                argument.positional = argument.positional or parameter.kind == parameter.POSITIONAL_ONLY
                argument.keyword_only = parameter.kind == parameter.KEYWORD_ONLY
                arguments.append(argument)
        step = Step(variable, callee, _positional_first(arguments))
        self.steps.append(step)
        return step

    def argument(self, parameter, callee, required, used: set, *, in_object: bool, depth: int) -> Argument | None:
        name, is_required = parameter.name, parameter.default is parameter.empty
        key = config_key(name, in_object=in_object)
        # A config object holds every spelling; a constructor's second dim is not d_model again, unless it is named
        # exactly so (d_word_vec, then d_model: both the model's width).
        if key and (in_object or key not in used or name == key
                    or any(w in name.lower().split("_") for w in SIDE_WORDS)):
            used.add(key)
            return Argument(name, f"c.{key}")
        if name in DERIVED:
            return Argument(name, DERIVED[name])
        if name == RNGS:
            return Argument(name, RNGS)
        tying = next((key for key, names in TYING_SYNONYMS.items() if name in names), None)
        if tying is not None:
            return tying_switch(parameter, callee, tying)
        if name.lower() == "deterministic":  # Flax's switch for dropout, often defaulting to False: evaluation's
            return Argument(name, "True", f"{_name(callee)}({name}): True, the model as evaluated (dropout off); a"
                                          " training step of your own builds one with False")
        built = self.built_argument(parameter, callee, required, depth) if depth < 4 else None
        if built is not None or not is_required:
            return built
        if name.lower() == "device":
            return Argument(name, '"cpu"')

        if name.lower() in LENGTH_NAMES:
            return Argument(name, str(LONGEST), f"{_name(callee)}({name}): no config key has this name; {LONGEST} is"
                                                " assumed, the longest sequence it accepts (the suite's are shorter)")
        if is_bare_module(_annotation(parameter, callee)):
            return Argument(name, "None", f"{_name(callee)}({name}) is annotated nn.Module, which says a module goes"
                                          " there, not which, and no class of that name is in its module: build it"
                                          " in module(c)", blocking=True)
        return Argument(name, "None", f"{_name(callee)}({name}): no config key has this name, and no annotation or"
                                      " class of that name says what to build: give its value in module(c)",
                        blocking=True)

    def built_argument(self, parameter, callee, required, depth: int) -> Argument | None:
        """A config object or a module, built by a step of its own before the call."""
        holder = config_object(parameter, callee, required)
        if holder is SimpleNamespace:
            return self.recorded(parameter, callee)
        if holder is not None:
            step = self.call(holder, self.variable("model_config"), in_object=True, depth=depth + 1)
            step.comment = (f"{_name(callee)}({parameter.name}) takes a config object: built here from the suite's"
                            " sizes")
            return Argument(parameter.name, step.variable, positional=True)
        absent = parameter.default is None and any(w in parameter.name.lower() for w in ("enc", "dec"))
        if parameter.default is not parameter.empty and not absent:
            return None  # an optional module: the callee builds its own
        cls, guess = module_class(parameter, callee)  # a stack defaulting to None is absent unless built here
        if cls is None:
            return None
        step = self.call(cls, self.variable(parameter.name), depth=depth + 1)
        return Argument(parameter.name, step.variable, guess, positional=True)

    def recorded(self, parameter, callee) -> Argument:
        fields, unknown = read_attributes(callee)
        arguments = [Argument(attribute, f"c.{key}") for attribute, key in fields.items()]
        if unknown:
            arguments.append(Argument(unknown, "None", f"{_name(callee)} reads {unknown} from its config object, which"
                                                       " matches no config key by name: give its value", blocking=True))
        comment = (f"TODO {_name(callee)}({parameter.name}) takes a config object: these are the attributes it read"
                   " while it was built, from the suite's sizes; add any it reads later")
        self.steps.append(Step(self.variable("model_config"), SimpleNamespace, arguments, comment))
        return Argument(parameter.name, self.steps[-1].variable, positional=True)


def tying_switch(parameter: inspect.Parameter, callee, key: str) -> Argument:
    """A switch that ties or unties tables: its default, or the paper's True where it has none, with a TODO saying
    the declarations follow that build and how to let the checks try the other."""
    value = parameter.default if isinstance(parameter.default, bool) else True
    given = "its default" if isinstance(parameter.default, bool) else "the paper's choice (§3.4)"
    return Argument(parameter.name, repr(value), f"{_name(callee)}({parameter.name}) ties or unties the tables: built"
                                                 f" with {value}, {given}, and supports declares what that build does"
                                                 f" (c.{key}); to have the checks ask the other, pass c.{key} and map"
                                                 " the other build's parameters too")


def _positional_first(arguments: list[Argument]) -> list[Argument]:
    """Leading modules and config objects are passed by position, as the callee's own code would write them; none
    after the first passed by name (Python allows no positional argument after a keyword one), and never a
    keyword-only parameter."""
    leading = True
    for argument in arguments:
        leading = leading and (argument.positional or argument.source == argument.name) and not argument.keyword_only
        argument.positional = leading
    return arguments


class _Recording(SimpleNamespace):
    """Every spelling of every config key, with the probe's value; remembers which ones were read."""

    def __init__(self, probe: ModelConfig):
        values = {name: getattr(probe, key) for table in (CONFIG_SYNONYMS, SYNONYMS) for key, names in table.items()
                  for name in names}
        super().__init__(**values)
        object.__setattr__(self, "_read", [])

    def __getattribute__(self, name):
        if not name.startswith("_") and name in object.__getattribute__(self, "__dict__"):
            object.__getattribute__(self, "_read").append(name)
        return object.__getattribute__(self, name)


def read_attributes(cls, probe: ModelConfig | None = None) -> tuple[dict[str, str], str | None]:
    """({attribute: config key} of the attributes ``cls`` reads from its config object while it is built, the first
    attribute it reads that no key names, else None)."""
    import torch

    recording = _Recording(probe or PROBE)
    unknown = None
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        try:
            cls(recording)
        except AttributeError as exc:
            unknown = getattr(exc, "name", None) or str(exc)
        except Exception:  # noqa: BLE001 - what it read until then is what the draft can say; the probe says the rest
            pass
    read = dict.fromkeys(recording._read)
    return {name: config_key(name, in_object=True) for name in read}, unknown


def plan(target) -> Plan:
    """How to build ``target`` (a class or a factory function) from the suite's config ``c``."""
    return Planner().plan(target)
