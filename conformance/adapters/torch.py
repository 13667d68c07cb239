"""An adapter for any PyTorch encoder-decoder: ``TorchAdapter`` (the whole adapter, declared), ``TorchModel``
(its model) and the helpers they are made of.

Only adapters of torch code import this module (it imports torch); ``conformance.adapters`` itself does not.
``TorchModel(module, config, names=NAMES, encode=..., decode=...)`` is a whole ``conformance.adapter.Model``:

* weights: ``load_weights`` / ``dump_weights`` through a name map (``conformance.adapters.names``): each
  ``nn.Linear`` weight transposed (it stores W^T), fused projections split and merged, a shared table
  copied into separate ones; parameters the map leaves out set to their identity values and listed by
  ``unmapped_parameters`` (docs/adapter-protocol.md, "A contract for real code");
* evaluation: ``forward``, ``encode``, ``decode`` (your callables, numpy in and out, evaluation mode, no
  gradients); ``greedy_decode``: your own translator (``greedy_decode=``); ``attention_weights`` by forward hooks
  on the attention modules you name;
* training: ``train_step`` with your own trainer (``trainer=``).

What the suite can supply in place of your code, only when you ask for it in one visible line
(``supplied=("greedy_decode", "train_step")``): the lesson's greedy loop over ``decode`` (or your
``generate_step``), and the paper's recipe (``PaperRecipe``: Adam, the schedule, the smoothed loss). The report
then says so, and a check whose verdict rests only on what the suite supplied is *supplied*, not passed: the
implementation is not credited with it (``conformance.provenance``).

Composition, not subclassing: give it callables. Each receives the module first, then tensors in your
layout (``batch_first=False``: token ids (L, B)).

``TorchAdapter(module, names=NAMES, conventions=..., <part>=...)`` is a whole ``conformance.adapter.Adapter``: its
model is a ``TorchModel``, its function parts cross the boundary through ``on_tensors``, its component parts
(``Component``: build from the weights' sizes, call on tensors) load their weights through the part of the model's
map under that layer or sublayer; docs/adapter-protocol.md, "An adapter of PyTorch code, declared".
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import difflib
import inspect
import math
import re
from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor, nn

from conformance.adapters.names import NameMap, NameMapError, Slot, attention_modules, layer_names, sublayer_names
from conformance.config import ModelConfig, Recipe
from conformance.paper.formulas import lrate
from conformance.provenance import copy_mark, marked, record
from conformance.weights import check_names, model_shapes

TABLES = ("E", "E_src", "E_tgt")  # rows are tokens: never transposed, whatever module holds them

# --------------------------------------------------------------------------------------------------
# Crossing the boundary
# --------------------------------------------------------------------------------------------------


def floats(x, dtype: torch.dtype = torch.float32) -> Tensor:
    """A numpy array (or scalar) as a new tensor; a copy, so read-only arrays (np.broadcast_to) are fine."""
    return torch.tensor(np.asarray(x), dtype=dtype)


def ids(x) -> Tensor:
    """Token ids as an int64 tensor."""
    return torch.tensor(np.asarray(x, dtype=np.int64))


def mask(x) -> Tensor | None:
    """A boolean mask as a tensor (None stays None), in whatever polarity it came."""
    return None if x is None else torch.tensor(np.asarray(x, dtype=bool))


def numpy(t: Tensor, dtype: torch.dtype = torch.float32) -> np.ndarray:
    """A tensor back across the boundary: detached, on the CPU, in ``dtype``, a copy (bfloat16, which NumPy lacks,
    as float32 holding its values)."""
    t = t.detach().cpu().to(dtype)
    return (t.float() if dtype == torch.bfloat16 else t).numpy().copy()


@contextlib.contextmanager
def seeded(seed: int):
    """Draw from torch's global generator seeded with ``seed`` (a module's own initialisation), and leave it as
    it was afterwards: ``with seeded(seed): net = MyTransformer(...)``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


# --------------------------------------------------------------------------------------------------
# Weights: canonical tensors as views of the module's parameters
# --------------------------------------------------------------------------------------------------


def stored_transposed(module: nn.Module, slot: Slot, name: str) -> bool:
    """Whether the parameter holds W^T: as the map says, else for nn.Linear (and MultiheadAttention's
    in-projections) and only for x @ W matrices, never for an embedding table."""
    if slot.transposed is not None:
        return slot.transposed
    owner_path, _, leaf = slot.path.rpartition(".")
    owner = module.get_submodule(owner_path)
    linear = (isinstance(owner, nn.Linear) and leaf == "weight") or (
        isinstance(owner, nn.MultiheadAttention) and leaf.endswith("proj_weight"))
    return linear and name.rsplit(".", 1)[-1] not in TABLES


def view(module: nn.Module, slot: Slot, name: str) -> Tensor:
    """The canonical tensor ``name`` as a view of its parameter (orientation x @ W; a block of a fused one)."""
    t = module.get_parameter(slot.path)
    if t.dim() == 2 and stored_transposed(module, slot, name):
        t = t.T
    if slot.blocks == 1:
        return t
    size = t.shape[-1] // slot.blocks
    return t[..., slot.block * size:(slot.block + 1) * size]


@torch.no_grad()
def write(module: nn.Module, weights: dict, slots: dict[str, tuple[Slot, ...]]) -> None:
    """Copy each canonical array into every place the map gives it (a shared table into each copy)."""
    for name, places in slots.items():
        for slot in places:
            target = view(module, slot, name)
            value = floats(weights[name], target.dtype)
            if tuple(value.shape) != tuple(target.shape):
                raise ValueError(f"{name}: shape {tuple(value.shape)} does not fit {slot.path}"
                                 f"{_block(slot)} {tuple(target.shape)} (orientation x @ W; add or remove '.T')")
            target.copy_(value)


def _block(slot: Slot) -> str:
    return f" block {slot.block} of {slot.blocks}" if slot.blocks > 1 else ""


def identity_value(module: nn.Module, path: str) -> float:
    """What a parameter without a canonical name is set to: values that change nothing the paper's weights decide.
    A norm's vector: the constant 1 or 0 it held when first asked (a gain built as ones, whatever its name: ``a_2``),
    kept for the module's life; else by its name: a norm's scale 1, anything else 0 (a bias, a norm's shift, learned
    positions)."""
    remembered = module.__dict__.setdefault("_conformance_identity_values", {})
    if path not in remembered:
        values = module.get_parameter(path).detach().flatten()
        built = float(values[0]) if values.numel() and bool((values == values[0]).all()) else None
        in_norm = _is_norm(module, path.rpartition(".")[0])
        remembered[path] = built if in_norm and built in (0.0, 1.0) else _identity_by_name(module, path)
    return remembered[path]


def _identity_by_name(module: nn.Module, path: str) -> float:
    owner_path, _, leaf = path.rpartition(".")
    return 1.0 if leaf in ("gamma", "scale") or (_is_norm(module, owner_path) and leaf == "weight") else 0.0


def _is_norm(module: nn.Module, owner_path: str) -> bool:
    return "norm" in type(module.get_submodule(owner_path)).__name__.lower()


def has_identity(module: nn.Module, path: str) -> bool:
    """Whether ``identity_value`` is true to the parameter: a vector or a scalar (a bias, a norm's scale and shift,
    an extra norm's), any norm's or bias's parameter, or a learned positional table (0: no position added, the
    documented case). A weight matrix has none: 0 would silence what it computes (an untied output matrix at 0
    makes every logit equal)."""
    owner_path, _, leaf = path.rpartition(".")
    if module.get_parameter(path).dim() < 2 or _is_norm(module, owner_path) or leaf in ("gamma", "beta", "scale"):
        return True
    words = [w for w in re.split(r"[._]+", path.lower()) if w]
    return "bias" in leaf.lower() or any(w.startswith("pos") or w in ("pe", "wpe") for w in words)


class UnmappedMatrixError(NameMapError):
    """Weight matrices the name map does not reach: ``load_weights`` will not set them to an "identity" value;
    ``problems``: one per matrix, its path, its shape and the canonical names that fit it."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        listed = "\n".join(f"  - {problem}" for problem in problems)
        matrices = "a weight matrix" if len(problems) == 1 else f"{len(problems)} weight matrices"
        ValueError.__init__(self, f"the name map leaves {matrices} without a canonical name; load_weights sets only"
                                  " parameters with a true identity value (norms, biases, learned positions), never a"
                                  f" matrix (likely cause: an untied output or a table the map misses):\n{listed}")


def refuse_matrices(module: nn.Module, paths: list[str], placed: dict[str, list[str]],
                    shapes: dict[str, tuple[int, ...]], absent: dict[str, tuple[int, ...]] | None = None) -> None:
    """``UnmappedMatrixError`` for each of ``paths`` without a true identity (``has_identity``), naming the closest
    canonical names: of those the map ``placed`` (name -> its parameter paths; ``shapes``: their shapes), to list it as
    a copy, and of the ``absent`` ones the map could list (W_out, in an untied configuration)."""
    problems = [_unmapped_matrix(module, path, placed, shapes, absent or {}) for path in paths
                if not has_identity(module, path)]
    if problems:
        raise UnmappedMatrixError(problems)


def _unmapped_matrix(module: nn.Module, path: str, placed: dict, shapes: dict, absent: dict) -> str:
    shape = tuple(module.get_parameter(path).shape)
    said = (f"{path} {shape} is a weight matrix no entry of the name map reaches, and a matrix has no identity value"
            " (0 would silence it)")
    hints = []
    for name in closest_names(path, shape, absent)[:1]:
        key, value = _entry(name, path, module)
        hints.append(f'{name} {absent[name]} fits it: add "{key}": "{value}" to the name map ({_absent_because(name)})')
    for name in closest_names(path, shape, shapes)[:1]:
        key, value = _entry(name, path, module)
        copies = ", ".join(f'"{_entry(name, other, module)[1]}"' for other in placed.get(name, []))
        hints.append(f'if it holds a copy of {name} {shapes[name]}, list it beside the map\'s: "{key}": [{copies},'
                     f' "{value}"]' + (" with Conventions(ties_embeddings=False)" if name == "E" else ""))
    if not hints:
        return f"{said}; no canonical name has its shape: map it by hand, or leave it out of the module"
    joined = "; or, ".join(hints)
    return f"{said}. {joined[:1].upper()}{joined[1:]}"


def _absent_because(name: str) -> str:
    if name == "W_out":
        return "the module keeps an output matrix of its own: do not declare supports tie_output=(True,)"
    if name in ("E_src", "E_tgt"):
        return "the module keeps separate source and target tables: do not declare supports share_embeddings=(True,)"
    return "in a configuration that has it: declare what the module supports in Conventions.supports"


def closest_names(path: str, shape: tuple[int, ...], canonical: dict[str, tuple[int, ...]], n: int = 2) -> list[str]:
    """The canonical names whose shape fits ``shape`` (as stored or transposed), the most similar to ``path`` first;
    in a layer, the names of that layer only."""
    layer = re.search(r"(^|\.)(\d+)\.", path)
    fitting = [name for name, want in canonical.items() if tuple(want) in (shape, shape[::-1])
               and (layer is None or f".{layer.group(2)}." in name or not re.search(r"\.\d+\.", name))]
    return sorted(fitting, key=lambda name: -_similarity(path, name))[:n]


TABLE_WORDS = {"W_out": ("out", "output", "generator", "head", "logits", "proj", "classifier", "vocab"),
               "E_tgt": ("tgt", "trg", "target", "dec", "decoder"), "E_src": ("src", "source", "enc", "encoder"),
               "E": ("emb", "embed", "embedding", "embeddings", "shared", "lut", "tok", "word")}


def _similarity(path: str, name: str) -> float:
    words = set(re.split(r"[._]+", path.lower()))
    said = len(words & set(TABLE_WORDS.get(name, ()))) + len(words & set(TABLE_WORDS["E"])) * name.startswith("E")
    return said + difflib.SequenceMatcher(None, path.lower(), name.lower()).ratio()


def _entry(name: str, path: str, module: nn.Module) -> tuple[str, str]:
    """The name map entry that would give ``name`` to the parameter at ``path``: ``{l}`` for its layer, a
    Linear's module for its weight."""
    owner_path, _, leaf = path.rpartition(".")
    value = owner_path if leaf == "weight" and isinstance(module.get_submodule(owner_path), nn.Linear) else path
    layer = re.search(r"\.(\d+)\.", name)
    if layer:
        name = name.replace(layer.group(0), ".{l}.", 1)
        value = re.sub(rf"(^|\.){layer.group(1)}\.", r"\1{l}.", value, count=1)
    return name, value


def parameter_paths(module: nn.Module) -> list[str]:
    """Every path to a parameter, a shared one under each of its names."""
    return [path for path, _ in module.named_parameters(remove_duplicate=False)]


def unmapped_paths(module: nn.Module, slots: dict[str, tuple[Slot, ...]]) -> list[str]:
    """The module's parameters (each once) that no slot reaches under any of its names."""
    mapped = {id(module.get_parameter(slot.path)) for places in slots.values() for slot in places}
    return [path for path, p in module.named_parameters() if id(p) not in mapped]


@torch.no_grad()
def reset(module: nn.Module, paths: list[str]) -> None:
    """Set each parameter at ``paths`` to its identity value (``refuse_matrices`` first: only true identities)."""
    for path in paths:
        module.get_parameter(path).fill_(identity_value(module, path))


def load_component(module: nn.Module, weights: dict, names: dict | None = None) -> nn.Module:
    """``module`` (a layer, an attention, a norm) with a component's canonical weights loaded through
    ``names`` (relative names: ``"self_attn.W_Q"``; ``conformance.adapters.sub_names`` derives them from the
    model's map; None: its parameter paths are the canonical names), the rest at identity, in eval mode."""
    paths = parameter_paths(module)
    slots = ({name: (Slot(name),) for name in weights} if names is None
             else NameMap(names).resolve(weights, paths))
    unmapped = unmapped_paths(module, slots)
    refuse_matrices(module, unmapped, {name: [slot.path for slot in places] for name, places in slots.items()},
                    {name: np.shape(value) for name, value in weights.items()})
    write(module, weights, slots)
    reset(module, unmapped)
    return module.eval()


# --------------------------------------------------------------------------------------------------
# Attention weights by forward hooks
# --------------------------------------------------------------------------------------------------


def attention_names(config: ModelConfig) -> list[str]:
    """The sublayers ``Model.attention_weights`` reports, in the reference's order."""
    names = [f"encoder.{layer}.self_attn" for layer in range(config.N)]
    return names + [f"decoder.{layer}.{sub}" for layer in range(config.N) for sub in ("self_attn", "cross_attn")]


def read_attention(module: nn.Module, args: tuple, kwargs: dict, output) -> Tensor:
    """The (B, h, Lq, Lk) weights of one call of an attention module: asked again of an
    ``nn.MultiheadAttention`` (its layers call it with ``need_weights=False``), else the second output,
    else an attribute the module keeps (``last_weights``, ``attn``, ``attention_weights``, ``attn_weights``)."""
    if isinstance(module, nn.MultiheadAttention):
        return _multihead_weights(module, args, kwargs)
    if isinstance(output, tuple) and len(output) > 1 and isinstance(output[1], Tensor) and output[1].dim() >= 3:
        return output[1]  # (out, weights); the suite checks the shape
    for attribute in ("last_weights", "attn", "attention_weights", "attn_weights"):
        value = getattr(module, attribute, None)
        if isinstance(value, Tensor):
            return value
    raise NotImplementedError(
        f"cannot read attention weights from {type(module).__name__}: it returns no (out, weights) pair and keeps"
        " none (as last_weights or attn). Fix: store them in forward, name the module that does, or pass read=")


def _multihead_weights(module: nn.MultiheadAttention, args: tuple, kwargs: dict) -> Tensor:
    """Per-head weights of the same call, computed again; nested (padded fast path) inputs padded back,
    their padding hidden as keys, as the layer would have hidden it."""
    call = inspect.signature(module.forward).bind(*args, **kwargs).arguments
    call.update(need_weights=True, average_attn_weights=False)
    if call["query"].is_nested:
        lengths = torch.tensor([t.shape[0] for t in call["key"].unbind()])
        same = call["query"] is call["key"]
        for role in ("query", "key", "value"):
            call[role] = call[role].to_padded_tensor(0.0)
        if same:
            call["key"] = call["value"] = call["query"]
        call["key_padding_mask"] = torch.arange(call["key"].shape[1])[None, :] >= lengths[:, None]
    return module.forward(**call)[1]


# --------------------------------------------------------------------------------------------------
# Training with the paper's recipe
# --------------------------------------------------------------------------------------------------


def recipe_record(recipe, *, own_loss: bool, rate: Callable) -> dict:
    """What of train_step ``PaperRecipe`` supplies (``conformance.provenance``): always the optimiser; the
    schedule unless the rate is the adapter's own; the loss unless the adapter gave its own."""
    own_rate = rate is not lrate
    supplies = ["optimizer"] + ["schedule"] * (not own_rate) + ["loss", "reported_loss"] * (not own_loss)
    settings = {"optimizer": f"Adam(betas={tuple(recipe.adam_betas)}, eps={recipe.adam_eps:g})",
                "schedule": f"the adapter's {getattr(rate, '__name__', 'rate')}" if own_rate
                else "the paper's lrate (§5.3)",
                "loss": "the adapter's loss" if own_loss else
                f"nn.CrossEntropyLoss(label_smoothing={recipe.label_smoothing:g}, ignore_index=pad_id)"}
    words = "; ".join(f"{k}: {v}" for k, v in settings.items())
    return record("conformance.adapters.torch.PaperRecipe", f"the suite's training step ({words})",
                  supplies=supplies, settings=settings)


class PaperRecipe:
    """§5.3, §5.4: Adam(recipe betas and eps) at base rate 1 scaled by ``LambdaLR(lambda s: rate(s + 1))``
    (LambdaLR counts from 0, the paper from 1), the smoothed cross-entropy over non-padding targets
    (``nn.CrossEntropyLoss(ignore_index=pad_id, label_smoothing=eps)``), dropout on, and the dropout masks
    of update n drawn from (seed, n) without touching the global random state.

    ``loss(logits (N, V), targets (N,)) -> tensor``: your own loss (convert what it reports with
    ``conformance.adapters.cross_entropy_from_kl`` / ``mean_from_sum`` in ``report``); ``rate(step,
    d_model, warmup)``: your own schedule. A subclass may replace ``loss`` (the batch's loss from the batch) and
    ``dropout_seed``; the reference's trainer does (``implementations/reference/training.py``)."""

    autocast: torch.dtype | None = None  # the forward pass and the loss under torch.autocast in this dtype (CPU)

    def __init__(self, module: nn.Module, config: ModelConfig, *, forward: Callable, seed: int = 0,
                 loss: Callable | None = None, rate: Callable = lrate, report: Callable | None = None):
        recipe = config.recipe
        self.module, self.forward, self.seed, self.steps_done = module, forward, seed, 0
        self.optimizer = torch.optim.Adam(module.parameters(), lr=1.0, betas=tuple(recipe.adam_betas),
                                          eps=recipe.adam_eps)
        self.schedule = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: rate(s + 1, config.d_model, recipe.warmup))
        self.criterion = loss or nn.CrossEntropyLoss(ignore_index=config.pad_id,
                                                     label_smoothing=recipe.label_smoothing)
        self.report = report or (lambda value, targets: value)
        self.provenance = recipe_record(recipe, own_loss=loss is not None, rate=rate)

    def dropout_seed(self) -> int:
        """The seed of this update's dropout masks: a function of (seed, update) alone."""
        return hash((self.seed, self.steps_done)) % 2**62

    def loss(self, src: Tensor, tgt_in: Tensor, tgt_out: Tensor) -> Tensor:
        """The loss of one batch: logits (B, T, V) flattened to (B*T, V) against tgt_out (B*T,)."""
        logits = self.forward(self.module, src, tgt_in)
        return self.criterion(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))

    def train_step(self, src: Tensor, tgt_in: Tensor, tgt_out: Tensor) -> dict:
        """One update; the loss of this batch before it, and the rate it used."""
        half = sorted({str(p.dtype) for p in self.module.parameters() if p.dtype in (torch.float16, torch.bfloat16)})
        if half:  # mixed precision keeps float32 weights; the paper's recipe on half weights is another algorithm
            raise NotImplementedError(
                f"the paper's recipe on {', '.join(half)} weights: Adam's eps 1e-9 is 0 in float16, and updates of"
                " 1e-7 x the rate vanish against half-precision weights; train under autocast (float32 weights):"
                " declare the dtype 'autocast'")
        self.module.train()
        lr = self.optimizer.param_groups[0]["lr"]  # read before the schedule moves on
        with torch.random.fork_rng(devices=[]):
            # dropout masks of this update, on the CPU generator that fork_rng restores (torch.manual_seed would
            # also queue a lazy CUDA seeding, with its stack trace, at every update)
            torch.random.default_generator.manual_seed(self.dropout_seed())
            with autocast(self.autocast):
                loss = self.loss(src, tgt_in, tgt_out)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
        self.optimizer.step()
        self.schedule.step()
        self.steps_done += 1
        return {"loss": float(self.report(float(loss.item()), tgt_out)), "lr": float(lr)}


def autocast(dtype: torch.dtype | None):
    """``torch.autocast`` on the CPU in ``dtype`` (the matmuls in it, the weights as they are); nothing for None."""
    return contextlib.nullcontext() if dtype is None else torch.autocast("cpu", dtype=dtype)


# --------------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------------

GREEDY_LOOP = record("conformance.adapters.torch.TorchModel", "the suite's greedy loop (the lesson's, batched) over"
                     " the implementation's decode")
NOT_GIVEN = {
    "greedy_decode": "the implementation has no greedy decoding of its own here: give TorchModel greedy_decode="
                     " (your translator), or supplied=(\"greedy_decode\",) for the suite's loop (not credited to it)",
    "train_step": "the implementation has no training step of its own here: give TorchModel trainer= (your"
                  " trainer), or supplied=(\"train_step\",) for the paper's recipe (not credited to it)",
}


def check_supplied(supplied, own: dict[str, object]) -> tuple[str, ...]:
    """The parts asked of the suite, refused when unknown or when the implementation gives its own too."""
    supplied = (supplied,) if isinstance(supplied, str) else tuple(supplied)
    unknown = [part for part in supplied if part not in NOT_GIVEN]
    if unknown:
        raise TypeError(f"supplied={supplied}: the suite can supply {', '.join(NOT_GIVEN)} only, not"
                        f" {', '.join(unknown)}")
    both = [part for part in supplied if own.get(part) is not None]
    if both:
        raise TypeError(f"supplied={supplied} and your own {', '.join(both)}: give one or the other")
    return supplied


def model_class_with(base: type, absent: list[str]) -> type:
    """``base`` without the model parts in ``absent``, so the suite reads which parts exist off the class."""
    if not absent:
        return base
    return type(base.__name__, (base,), dict.fromkeys(absent))


def numpy_ids(t) -> np.ndarray:
    """Token ids back across the boundary (a tensor or an array), as int64."""
    return (t.detach().cpu().numpy() if isinstance(t, Tensor) else np.asarray(t)).astype(np.int64)


class TorchModel:
    """A ``conformance.adapter.Model`` around any ``nn.Module`` encoder-decoder.

    names: the name map (``conformance.adapters.names``). encode(module, src) -> memory; decode(module,
    tgt_in, memory, src) -> logits (default: the module's own ``encode`` / ``decode``); forward(module,
    src, tgt_in) -> logits (default: decode after encode). greedy_decode(module, src, max_len) -> (B, L) ids
    after ``<s>``: your own translator (greedy, each row ending with ``</s>`` then padding). trainer(module) -> an
    object with ``train_step(src, tgt_in, tgt_out)`` on tensors: your own training step.
    attention: a name map from the reported sublayers (``"*.{l}.self_attn"``, ``"decoder.{l}.cross_attn"``) to
    module paths, read by ``read_attention`` (or ``read=``). batch_first: False for (L, B) token ids. dtype: the
    torch dtype the module computes in. autocast: a half dtype every pass runs under ``torch.autocast`` in (the
    module's weights stay in ``dtype``, float32: mixed precision). seed: the dropout masks' seed.

    supplied: the parts the suite supplies because your code has none, each named on purpose and reported as the
    suite's: ``"greedy_decode"`` (the lesson's loop, batched, over decode's last position, or over
    ``generate_step(module, ys, memory, src) -> (B, V)`` scores of the next token), ``"train_step"``
    (``PaperRecipe`` following ``rate(step, d_model, warmup)``, the paper's schedule unless you give yours).
    A part neither given nor supplied is not implemented.
    """

    def __init__(self, module: nn.Module, config, *, names: dict, encode: Callable | None = None,
                 decode: Callable | None = None, forward: Callable | None = None,
                 generate_step: Callable | None = None, attention: dict | None = None,
                 read: Callable = read_attention, trainer: Callable | None = None, batch_first: bool = True,
                 dtype: torch.dtype = torch.float32, seed: int = 0, rate: Callable = lrate,
                 greedy_decode: Callable | None = None, supplied: tuple[str, ...] = (),
                 autocast: torch.dtype | None = None):
        self.supplied = check_supplied(supplied, {"greedy_decode": greedy_decode, "train_step": trainer})
        self.module = module
        self.config = config if isinstance(config, ModelConfig) else ModelConfig.from_dict(config)
        self.names, self.attention = NameMap(names), (None if attention is None else NameMap(attention))
        self.read, self.batch_first, self.dtype, self.seed = read, batch_first, dtype, seed
        self.autocast = autocast
        self._encode = encode or (lambda m, src: m.encode(src))
        self._decode = decode or (lambda m, tgt_in, memory, src: m.decode(tgt_in, memory, src))
        self._forward = forward or (lambda m, src, tgt_in: self._decode(m, tgt_in, self._encode(m, src), src))
        self._step = generate_step or self._last_position
        self._translate, self._rate = greedy_decode, rate
        self._make_trainer = trainer if trainer is not None else (
            (lambda m: PaperRecipe(m, self.config, forward=self._forward, seed=seed, rate=rate))
            if "train_step" in self.supplied else None)
        self._trainer = None  # built at the first train_step, on the module as it is then

    @property
    def __conformance_supplied__(self) -> dict[str, dict]:
        """What the suite supplies of this model (``conformance.provenance``): the greedy loop when asked for, the
        training step's recipe when the trainer is a ``PaperRecipe`` (asked for, or built by your trainer)."""
        found = {}
        if "greedy_decode" in self.supplied:
            found["model.greedy_decode"] = GREEDY_LOOP
        if self._trainer is not None and isinstance(getattr(self._trainer, "provenance", None), dict):
            found["model.train_step"] = self._trainer.provenance  # a PaperRecipe, perhaps built by your trainer
        elif self._trainer is None and "train_step" in self.supplied:
            found["model.train_step"] = recipe_record(self.config.recipe, own_loss=False, rate=self._rate)
        return found

    # -- weights ------------------------------------------------------------------------------------
    def slots(self) -> dict[str, tuple[Slot, ...]]:
        """Every canonical name of the config -> where it lives (``NameMapError`` lists every misfit)."""
        return self.names.resolve(model_shapes(self.config), parameter_paths(self.module))

    def views(self) -> dict[str, Tensor]:
        """Every canonical tensor as a view of the module's parameters, in ``model_shapes`` order."""
        return {name: view(self.module, places[0], name) for name, places in self.slots().items()}

    def load_weights(self, weights: dict[str, np.ndarray]) -> None:
        problems = check_names(weights, model_shapes(self.config))
        if problems:
            raise KeyError(f"canonical weights do not match the config: {'; '.join(problems)}")
        slots = self.slots()
        unmapped = unmapped_paths(self.module, slots)
        shapes = model_shapes(self.config)
        untied = model_shapes(self.config.replace(share_embeddings=False, tie_output=False, attention_bias=True))
        refuse_matrices(self.module, unmapped, {name: [slot.path for slot in places] for name, places in slots.items()},
                        shapes, {name: shape for name, shape in untied.items() if name not in shapes})
        write(self.module, weights, slots)
        reset(self.module, unmapped)

    def dump_weights(self) -> dict[str, np.ndarray]:
        return {name: numpy(t, self.dtype) for name, t in self.views().items()}

    def unmapped_parameters(self) -> dict[str, int]:
        """The module's parameters without a canonical name (identity values after ``load_weights``)."""
        paths = set(unmapped_paths(self.module, self.slots()))
        return {path: p.numel() for path, p in self.module.named_parameters() if path in paths}

    # -- evaluation ---------------------------------------------------------------------------------
    @torch.no_grad()
    def forward(self, src, tgt_in) -> np.ndarray:
        with autocast(self.autocast):
            return numpy(self._forward(self.module.eval(), ids(src), ids(tgt_in)), self.dtype)

    @torch.no_grad()
    def encode(self, src) -> np.ndarray:
        with autocast(self.autocast):
            return numpy(self._encode(self.module.eval(), ids(src)), self.dtype)

    @torch.no_grad()
    def decode(self, tgt_in, memory, src) -> np.ndarray:
        with autocast(self.autocast):
            return numpy(self._decode(self.module.eval(), ids(tgt_in), floats(memory, self.dtype), ids(src)),
                         self.dtype)

    def _layout(self, ys: Tensor) -> Tensor:
        """(B, L) ids -> the module's layout."""
        return ys if self.batch_first else ys.T.contiguous()

    def _last_position(self, module, ys, memory, src) -> Tensor:
        logits = self._decode(module, ys, memory, src)
        return logits[:, -1] if self.batch_first else logits[-1]

    @torch.no_grad()
    def greedy_decode(self, src, max_len: int) -> np.ndarray:
        """Your translator (``greedy_decode=``), or, when supplied, the lesson's loop."""
        with autocast(self.autocast):
            if self._translate is not None:
                return numpy_ids(self._translate(self.module.eval(), ids(src), int(max_len)))
            if "greedy_decode" not in self.supplied:
                raise NotImplementedError(NOT_GIVEN["greedy_decode"])
            return self._greedy_loop(src, max_len)

    def _greedy_loop(self, src, max_len: int) -> np.ndarray:
        """The lesson's loop, batched: encode once, start from <s>, append each row's argmax; a row that
        emitted </s> continues with padding; stop when every row has, or after ``max_len`` tokens."""
        cfg, module, src = self.config, self.module.eval(), ids(src)
        memory = self._encode(module, src)
        batch = src.shape[0 if self.batch_first else 1]
        ys = torch.full((batch, 1), cfg.bos_id, dtype=torch.long)  # (B, 1): <s>
        finished = torch.zeros(batch, dtype=torch.bool)
        for _ in range(int(max_len)):
            next_id = self._step(module, self._layout(ys), memory, src).argmax(-1)  # (B,)
            next_id = torch.where(finished, cfg.pad_id, next_id)
            ys = torch.cat([ys, next_id[:, None]], dim=1)
            finished |= next_id == cfg.eos_id
            if bool(finished.all()):
                break
        return self._layout(ys[:, 1:]).numpy().astype(np.int64)

    @torch.no_grad()
    def attention_weights(self, src, tgt_in) -> dict[str, np.ndarray]:
        """(B, h, Lq, Lk) by sublayer name, read by forward hooks during one evaluation forward pass."""
        if self.attention is None:
            raise NotImplementedError("no attention modules named: pass attention={'*.{l}.self_attn': ...,"
                                      " 'decoder.{l}.cross_attn': ...} to TorchModel")
        module = self.module.eval()
        named = [name for name in attention_names(self.config) if self.attention.entry(name)]  # the rest: unread
        found = self.attention.resolve(named, [path for path, _ in module.named_modules()])
        captured: dict[str, Tensor] = {}
        hooks = [module.get_submodule(places[0].path).register_forward_hook(self._keep(name, captured),
                                                                            with_kwargs=True)
                 for name, places in found.items()]
        try:
            with autocast(self.autocast):
                self._forward(module, ids(src), ids(tgt_in))
        finally:
            for hook in hooks:
                hook.remove()
        return {name: numpy(captured[name], self.dtype) for name in found if name in captured}

    def _keep(self, name: str, captured: dict):
        def hook(module, args, kwargs, output):
            captured[name] = self.read(module, args, kwargs, output).detach()
        return hook

    # -- training -----------------------------------------------------------------------------------
    def train_step(self, src, tgt_in, tgt_out) -> dict:
        if self._make_trainer is None:
            raise NotImplementedError(NOT_GIVEN["train_step"])
        if self._trainer is None:
            self._trainer = self._make_trainer(self.module)
        if isinstance(self._trainer, PaperRecipe):  # the forward pass and loss under autocast, the update outside
            self._trainer.autocast = self.autocast
            return self._trainer.train_step(ids(src), ids(tgt_in), ids(tgt_out))
        with autocast(self.autocast):  # your trainer: all of its step
            return self._trainer.train_step(ids(src), ids(tgt_in), ids(tgt_out))


# --------------------------------------------------------------------------------------------------
# A whole adapter, declared: the parts as data and plain functions on tensors
# --------------------------------------------------------------------------------------------------

DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16}


def on_tensors(fn: Callable, dtype: torch.dtype = torch.float32) -> Callable:
    """``fn`` (on tensors) as a part (on numpy): float arrays in as ``dtype`` tensors, boolean as boolean, integer
    as int64, scalars as they are; out a tensor as an array in ``dtype`` (a 0-d one as a float), a tuple item by
    item, a number as a float. ``on_tensors(my_layer_norm)(x, gamma, beta, 1e-6)`` is
    ``numpy(my_layer_norm(floats(x), floats(gamma), floats(beta), 1e-6))``. Every module ``fn`` calls runs in
    evaluation mode (``evaluation_mode``), as a part is asked outside training."""

    def part(*args):
        with torch.no_grad(), evaluation_mode():
            return _out(fn(*(_in(a, dtype) for a in args)), dtype)

    part.__name__ = part.__qualname__ = getattr(fn, "__name__", "part")
    part.__doc__ = fn.__doc__
    return copy_mark(fn, part)


@contextlib.contextmanager
def evaluation_mode():
    """Every module called inside the block runs in evaluation mode, and gets its own mode back afterwards: a part
    that builds a module (``PositionalEncoding(d_model, dropout=0.1)``, in training mode as nn.Module starts) or
    calls one of the model's must not drop out, nor leave the model's modules switched."""
    switched: list[tuple[nn.Module, bool]] = []

    def to_evaluation(module, args):
        if module.training:
            switched.append((module, True))
            module.training = False

    handle = torch.nn.modules.module.register_module_forward_pre_hook(to_evaluation)
    try:
        yield
    finally:
        handle.remove()
        for module, training in switched:
            module.training = training


def _under_autocast(part: Callable, dtype: torch.dtype) -> Callable:
    """``part`` run under ``torch.autocast`` in ``dtype`` (CPU)."""
    def run(*args):
        with autocast(dtype):
            return part(*args)

    run.__name__ = run.__qualname__ = getattr(part, "__name__", "part")
    run.__doc__ = part.__doc__
    return copy_mark(part, run)


def _in(a, dtype: torch.dtype):
    if isinstance(a, np.generic):
        return a.item()
    if not isinstance(a, np.ndarray):
        return a
    if a.dtype == bool:
        return mask(a)
    return ids(a) if np.issubdtype(a.dtype, np.integer) else floats(a, dtype)


def _out(value, dtype: torch.dtype):
    if isinstance(value, tuple):
        return tuple(_out(v, dtype) for v in value)
    if isinstance(value, Tensor):
        return float(value.item()) if value.dim() == 0 else numpy(value, dtype)
    return float(value) if isinstance(value, int | float | np.floating) else value


@marked("conformance.adapters.torch.torch_layer_norm", "torch.nn.functional.layer_norm")
def torch_layer_norm(x: Tensor, gamma: Tensor, beta: Tensor, eps: float) -> Tensor:
    """§3.1 as ``torch.nn.functional.layer_norm`` computes it (biased variance, eps inside the root)."""
    return torch.nn.functional.layer_norm(x, x.shape[-1:], gamma, beta, float(eps))


@marked("conformance.adapters.torch.torch_smoothed_loss",
        "nn.CrossEntropyLoss(ignore_index=pad_id, label_smoothing=eps)")
def torch_smoothed_loss(logits: Tensor, targets: Tensor, epsilon: float, pad_id: int) -> Tensor:
    """§5.4 as ``nn.CrossEntropyLoss(ignore_index=pad_id, label_smoothing=epsilon)`` computes it, on half-precision
    logits widened to float32 first (as autocast does, and every library: a loss summed in float16 is off by far
    more than its printed digits)."""
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))
    return nn.CrossEntropyLoss(ignore_index=int(pad_id), label_smoothing=float(epsilon))(logits, targets)


@marked("conformance.adapters.torch.torch_scaled_dot_product_attention",
        "torch.nn.functional.scaled_dot_product_attention (its weights written out)")
def torch_scaled_dot_product_attention(q: Tensor, k: Tensor, v: Tensor, blocked: Tensor | None):
    """§3.2.1 as torch computes it, mask in torch.nn's polarity (True = blocked; declare ``mask="blocked"``): the
    output from ``F.scaled_dot_product_attention``, the weights written out (it returns none) with the softmax its
    math kernel uses (a row of -inf gets 0, not NaN)."""
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=None if blocked is None else ~blocked)
    scores = (q / math.sqrt(q.shape[-1])) @ k.transpose(-2, -1)  # scaled first, as its kernel does: finite in float16
    return out, _safe_softmax(scores if blocked is None else scores.masked_fill(blocked, float("-inf")))


def _safe_softmax(scores: Tensor) -> Tensor:
    if hasattr(torch, "_safe_softmax"):
        return torch._safe_softmax(scores, -1)
    dead = torch.isneginf(scores).all(-1, keepdim=True)
    return torch.softmax(scores.masked_fill(dead, 0.0), -1).masked_fill(dead, 0.0)


def call_multihead(mha: nn.MultiheadAttention, query: Tensor, key: Tensor, value: Tensor, blocked: Tensor | None):
    """A standalone ``nn.MultiheadAttention`` as the ``multi_head_attention`` part (the default call of a Component
    that builds one; declare ``mask="blocked"``): mask (B, Lq, Lk) repeated per head, nn's (B*h, Lq, Lk). Asked for
    its weights, nn gives NaN for a query with every key blocked, but b_O (weights 0) without them, which is what
    its layers use: the output of that call, and the weights of that row as the 0 they stand for."""
    attn_mask = None if blocked is None else blocked.repeat_interleave(mha.num_heads, dim=0)
    out, _ = mha(query, key, value, attn_mask=attn_mask, need_weights=False)
    _, weights = mha(query, key, value, attn_mask=attn_mask, need_weights=True, average_attn_weights=False)
    return out, torch.nan_to_num(weights, nan=0.0)


@dataclasses.dataclass(frozen=True)
class Sizes:
    """What a component is built with, read off the weights it is given: d_model, h, d_ff, the LayerNorm eps,
    whether the attention projections carry biases, whether an attention sublayer is cross-attention."""

    d_model: int
    h: int | None = None
    d_ff: int | None = None
    eps: float | None = None
    bias: bool | None = None
    cross: bool = False


@dataclasses.dataclass(frozen=True)
class Component:
    """One of your modules as a part: ``build(sizes) -> nn.Module``; ``call(module, *inputs)`` with the part's
    inputs as tensors (masks in your declared polarity; default: ``module(*inputs)``, ``call_multihead`` for an
    ``nn.MultiheadAttention``; a tuple's first item is the
    output, for ``multi_head_attention`` the second its weights, else the weights the module keeps as
    ``last_weights`` or ``attn``); ``names``: its relative name map (default: derived from the model's map,
    ``conformance.adapters.names.layer_names`` and ``sublayer_names``)."""

    build: Callable
    call: Callable | None = None
    names: dict | None = None


# Each component part: its inputs after the weights' position, how its sizes are read, its default names.
def _sizes(part: str, weights: dict, h=None, eps=None, memory=None) -> Sizes:
    if part in ("encoder_layer", "decoder_layer"):
        d_model, d_ff = np.shape(weights["ffn.W1"])
        return Sizes(int(d_model), int(h), int(d_ff), float(eps), "self_attn.b_Q" in weights)
    if part in ("feed_forward", "ffn_sublayer"):
        d_model, d_ff = np.shape(weights["W1"])
        return Sizes(int(d_model), d_ff=int(d_ff), eps=None if eps is None else float(eps))
    return Sizes(len(weights["W_O"]), int(h), eps=None if eps is None else float(eps), bias="b_Q" in weights,
                 cross=memory is not None)


def _default_names(part: str, names: dict, cross: bool = False) -> dict:
    if part in ("encoder_layer", "decoder_layer"):
        return layer_names(names, part.removesuffix("_layer"))
    sublayer = "ffn" if part in ("feed_forward", "ffn_sublayer") else "cross_attn" if cross else "self_attn"
    return sublayer_names(names, sublayer, with_norm=part.endswith("_sublayer"))


class TorchAdapter:
    """A whole adapter around an ``nn.Module`` encoder-decoder, from declarations (composition: no subclassing)::

        adapter = TorchAdapter(lambda c: MyTransformer(c.src_vocab, c.d_model, c.h, c.d_ff, c.N), names=NAMES,
                               conventions=Conventions(mask="keep"), positional_encoding=my_pe,
                               encoder_layer=Component(lambda s: MyLayer(s.d_model, s.h, s.d_ff),
                                                       lambda layer, x, keep: layer(x, keep[:, None, None])))

    * ``module(config: ModelConfig) -> nn.Module``: built under ``seeded(seed)`` for ``build_model``, and on
      ``count_on`` ("meta": shapes only; "cpu" for code that moves its modules) for ``parameter_count`` (unless you
      give ``parameter_count``). ``init(model: TorchModel, seed)``: your own initialisation, once it is built.
      ``make_model(config, seed) -> Model``: a model of your own in place of ``module``'s.
    * ``names``: the name map (``conformance.adapters.names``); the maps of one layer or sublayer built alone and the
      attention modules read by hooks are derived from it (``layer_names``, ``sublayer_names``,
      ``attention_modules``).
    * ``model``: keyword arguments for ``TorchModel`` (encode=, decode=, forward=, greedy_decode=, trainer=,
      generate_step=, attention=), kept as ``model_options`` and read at each ``build_model``.
    * ``supplied``: the model's parts the suite supplies because your code has none, in one visible line
      (``supplied=("greedy_decode", "train_step")``: the lesson's greedy loop, the paper's training recipe). The
      report names them, and a check that judges only what the suite supplied is not credited to your code.
    * Function parts (positional_encoding, layer_norm, scaled_dot_product_attention, learning_rate,
      label_smoothed_loss): plain functions on tensors (``on_tensors``); ``learning_rate`` is also the schedule
      ``train_step`` follows. Component parts (multi_head_attention, feed_forward, encoder_layer, decoder_layer,
      attention_sublayer, ffn_sublayer): ``Component``s.

    Only the parts you give exist: the rest are *not implemented*. ``conventions.dtype`` is the dtype everything
    is computed in, ``conventions.batch_first`` the model's layout."""

    FUNCTIONS = ("positional_encoding", "layer_norm", "scaled_dot_product_attention", "learning_rate",
                 "label_smoothed_loss")
    COMPONENTS = ("multi_head_attention", "feed_forward", "encoder_layer", "decoder_layer", "attention_sublayer",
                  "ffn_sublayer")
    MODEL_OPTIONS = ("encode", "decode", "forward", "greedy_decode", "trainer", "generate_step", "attention")

    def __init__(self, module: Callable | None = None, *, names: dict, conventions, init: Callable | None = None,
                 model: dict | None = None, make_model: Callable | None = None, model_class: type = TorchModel,
                 parameter_count: Callable | None = None, count_on: str = "meta", name: str | None = None,
                 supplied: tuple[str, ...] = (), **parts):
        unknown = set(parts) - set(self.FUNCTIONS) - set(self.COMPONENTS)
        options = sorted(unknown & set(self.MODEL_OPTIONS))
        if options:
            are = "is an option" if len(options) == 1 else "are options"
            raise TypeError(f"TorchAdapter: {', '.join(options)} {are} of its models, not a part. Fix: pass model={{"
                            + ", ".join(f"{option!r}: ..." for option in options) + "}")
        if unknown:
            raise TypeError(f"TorchAdapter: no part named {', '.join(sorted(unknown))} (parts: "
                            f"{', '.join(self.FUNCTIONS + self.COMPONENTS)})")
        self.conventions, self.names, self.name, self.model_class = conventions, dict(names), name, model_class
        self.dtype = self._built_in = DTYPES[conventions.dtype]  # what it computes in; what its module is built in
        self.autocast: torch.dtype | None = None  # with_dtype of a dtype declared "autocast"
        self._module, self._init, self._make_model, self._count_on = module, init, make_model, count_on
        self.model_options = {"attention": attention_modules(names) or None, **(model or {})}
        if supplied:
            self.model_options["supplied"] = supplied
        options = self.model_options
        own = {"greedy_decode": options.get("greedy_decode"), "train_step": options.get("trainer")}
        self._supplied = check_supplied(self.model_options.get("supplied", ()), own)
        if model_class is TorchModel and make_model is None:  # the parts its models will have, exactly
            self.model_class = model_class_with(TorchModel, [p for p in own if own[p] is None
                                                             and p not in self._supplied])
        self._functions = {part: fn for part, fn in parts.items() if part in self.FUNCTIONS and fn is not None}
        self._parts = {part: fn for part, fn in parts.items() if fn is not None}
        self._make_parts()
        if module is not None or make_model is not None:
            self.build_model = self._build_model
        if parameter_count is not None or module is not None:
            self.parameter_count = parameter_count or self._parameter_count

    def _make_parts(self) -> None:
        """Each part given, crossing the boundary in ``self.dtype`` and run under ``self.autocast``."""
        for part, fn in self._parts.items():
            made = self._component(part, fn) if part in self.COMPONENTS else on_tensors(fn, self.dtype)
            setattr(self, part, made if self.autocast is None else _under_autocast(made, self.autocast))

    def with_dtype(self, dtype: str) -> TorchAdapter:
        """This adapter computing in ``dtype`` (a run's ``--dtype``, one of ``conventions.dtypes``): a shallow copy
        whose parts, components and models are built and run in it. Declared ``"native"`` (or not declared): weights
        and activations in ``dtype``, each model's module cast to it once initialised (a seed gives the same weights,
        rounded); ``"autocast"``: weights and what crosses in float32, every part and pass under ``torch.autocast``."""
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
        switched = copy.copy(self)
        for attribute, value in vars(self).items():  # build_model, parameter_count: bound to the copy
            if inspect.ismethod(value) and isinstance(value.__self__, TorchAdapter):
                setattr(switched, attribute, getattr(switched, value.__func__.__name__))
        switched.conventions = dataclasses.replace(self.conventions, dtype=dtype, dtypes={})
        autocasts = self.conventions.dtypes.get(dtype) == "autocast"
        switched.dtype = self._built_in if autocasts else DTYPES[dtype]
        switched.autocast = DTYPES[dtype] if autocasts else None
        switched._make_parts()
        return switched

    def __repr__(self) -> str:
        return f"TorchAdapter({self.name!r})" if self.name else super().__repr__()

    @property
    def __conformance_supplied__(self) -> dict[str, dict]:
        """The model's parts the suite supplies (``conformance.provenance``), known before a model is built."""
        found = {"model.greedy_decode": GREEDY_LOOP} if "greedy_decode" in self._supplied else {}
        if "train_step" in self._supplied:
            found["model.train_step"] = recipe_record(Recipe(), own_loss=False,
                                                      rate=self._functions.get("learning_rate", lrate))
        return found

    def _build_model(self, config: dict, seed: int):
        config, seed = ModelConfig.from_dict(config), int(seed)
        if self._make_model is not None:
            return self._in_dtype(self._make_model(config, seed))
        with seeded(seed):
            net = self._module(config)
        options = dict(self.model_options)
        if "learning_rate" in self._functions:  # your schedule trains your model
            options.setdefault("rate", self._functions["learning_rate"])
        model = TorchModel(net, config, names=self.names, batch_first=self.conventions.batch_first,
                           dtype=self.dtype, seed=seed, **options)
        if self._init is not None:
            self._init(model, seed)
        return self._in_dtype(model)

    def _in_dtype(self, model):
        """A model built as declared, switched to what ``with_dtype`` asked: its module cast, its passes in it."""
        if isinstance(model, TorchModel) and (self.dtype != self._built_in or self.autocast is not None):
            model.module.to(self.dtype)
            model.dtype, model.autocast = self.dtype, self.autocast
        return model

    def _parameter_count(self, config: dict) -> int:
        with torch.device(self._count_on):
            return sum(p.numel() for p in self._module(ModelConfig.from_dict(config)).parameters())

    def _component(self, part: str, spec: Component) -> Callable:
        dtype = self.dtype

        def call(module, *inputs):
            if spec.call is not None:
                return spec.call(module, *inputs)
            return call_multihead(module, *inputs) if isinstance(module, nn.MultiheadAttention) else module(*inputs)

        def built(weights: dict, sizes: Sizes) -> nn.Module:
            names = spec.names if spec.names is not None else _default_names(part, self.names, sizes.cross)
            with torch.random.fork_rng(devices=[]):  # its initialisation is overwritten: leave the global RNG be
                module = spec.build(sizes).to(dtype)
            return load_component(module, weights, names)

        def tensors(arrays) -> list:
            """Equal arrays become one tensor, so that code that tests ``query is key`` takes its own path."""
            out: list = []
            for i, a in enumerate(arrays):
                same = next((out[j] for j in range(i) if isinstance(a, np.ndarray) and np.array_equal(arrays[j], a)
                             and arrays[j].dtype == a.dtype), None)
                out.append(same if same is not None else _in(a, dtype))
            return out

        def first(output):
            return output[0] if isinstance(output, tuple) else output

        @torch.no_grad()
        def run(inputs: list, weights: dict, sizes: Sizes):
            module = built(weights, sizes)
            output = call(module, *tensors(inputs))
            if part != "multi_head_attention":
                return numpy(first(output), dtype)
            weights_out = output[1] if isinstance(output, tuple) else read_attention(module, (), {}, output)
            return numpy(first(output), dtype), numpy(weights_out, dtype)

        parts = {
            "multi_head_attention": lambda query, key, value, weights, h, mask: run(
                [query, key, value, mask], weights, _sizes(part, weights, h)),
            "feed_forward": lambda x, weights: run([x], weights, _sizes(part, weights)),
            "encoder_layer": lambda x, weights, h, eps, src_mask: run(
                [x, src_mask], weights, _sizes(part, weights, h, eps)),
            "decoder_layer": lambda y, memory, weights, h, eps, tgt_mask, src_mask: run(
                [y, memory, tgt_mask, src_mask], weights, _sizes(part, weights, h, eps)),
            "attention_sublayer": lambda x, memory, weights, h, eps, mask: run(
                [x, memory, mask], weights, _sizes(part, weights, h, eps, memory)),
            "ffn_sublayer": lambda x, weights, eps: run([x], weights, _sizes(part, weights, eps=eps)),
        }
        return parts[part]
