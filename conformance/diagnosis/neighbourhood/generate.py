"""The oracle's neighbourhood, generated: every formula of the NumPy implementation, each mutated by every operator
(``operators``), each mutation run on a fixed battery of problems (``screen``) and kept when it computes something
other than the paper (a mutation that changes nothing, or that fails on every problem, is no neighbour).
Mutations that answer identically on the whole battery are one neighbour with several forms (a tie).

The result is ``neighbours.json`` beside this module: each neighbour's formula, its mutated source and both
expressions, so that a review reads every neighbour the diagnosis may state. It is generated, never written by
hand, and reproducible from the oracle:

    python -m conformance.diagnosis.neighbourhood --write    # regenerate (about a minute on 2 cores)
    python -m conformance.diagnosis.neighbourhood --check    # exit 1 when the file is not what the oracle gives

The file records a digest of the oracle's source, so a changed oracle with a stale file is caught at once
(``stale``).
"""

from __future__ import annotations

import ast
import copy
import hashlib
import inspect
import json
import signal
import textwrap
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from conformance.diagnosis.neighbourhood.operators import INERT_KEYWORDS, OPERATORS
from conformance.diagnosis.neighbourhood.words import change

PATH = Path(__file__).with_name("neighbours.json")

# The oracle's formulas: the methods that compute something of the paper (their bookkeeping left out).
ADAPTER_FORMULAS = (
    "pe_positions", "pe_frequencies", "pe_interleave", "sinusoids", "layer_norm_variance", "layer_norm_denominator",
    "layer_norm", "scale_scores", "mask_scores", "softmax", "attention_weights", "scaled_dot_product_attention",
    "_attend", "project", "multi_head_attention", "activation", "feed_forward", "_sublayer", "attention_sublayer",
    "ffn_sublayer", "encoder_layer",
    "decoder_layer", "learning_rate", "smoothed_target", "token_losses", "reduce_loss", "label_smoothed_loss",
    "attention_parameters", "ffn_parameters", "encoder_layer_parameters", "decoder_layer_parameters",
    "embedding_parameters", "output_parameters", "parameter_count",
)
MODEL_FORMULAS = ("_embed", "_logits", "encode", "decode", "greedy_decode")
MODULE_FORMULAS = ("_softmax", "_log_softmax", "_additive_padding")


def _module():
    from conformance.implementations.numpy_impl import adapter as module

    return module


def oracle_digest() -> str:
    """A digest of the oracle's source: the file records it, so a stale file is seen without regenerating."""
    return hashlib.sha256(inspect.getsource(_module()).encode()).hexdigest()[:16]


def formula_source(owner: str, name: str) -> str:
    module = _module()
    holder = {"adapter": module.NumpyAdapter, "model": module.NumpyModel, "module": module}[owner]
    return textwrap.dedent(inspect.getsource(getattr(holder, name)))


def sections() -> dict[str, str]:
    """Each formula's paper section and its title, read from the oracle's own "# -- §3.5 ..." comments."""
    found, current = {}, ""
    for line in inspect.getsource(_module()).splitlines():
        stripped = line.strip()
        if stripped.startswith("# --"):
            current = stripped.removeprefix("# --").strip(" -")  # "§3.4 embeddings and the output projection"
        elif stripped.startswith("def "):
            found.setdefault(stripped[4:].split("(")[0], current)
    return found


# --------------------------------------------------------------------------------------------------
# Mutation
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mutation:
    owner: str  # "adapter", "model" or "module"
    formula: str
    family: str
    site: int  # the mutated node's index in the formula's walk: with ``formula`` a stable identity
    source: str  # the mutated function
    paper: str  # the statement as the paper computes it
    found: str  # the same statement mutated
    paper_piece: str  # the piece changed, before and after
    found_piece: str
    words: str  # what changed, in words (``words.change``)

    @property
    def key(self) -> str:
        return f"{self.formula}:{self.site}:{self.family}"


def _scope(fn: ast.FunctionDef) -> tuple[list[str], list[str]]:
    """The names a formula holds (its arguments and locals, nested functions' too) and its weight keys."""
    names: list[str] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.arg) and node.arg != "self":
            names.append(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.append(node.id)
    keys = [node.value for node in ast.walk(fn) if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and 0 < len(node.value) <= 12 and node.value.replace("_", "a").replace(".", "a").isalnum()]
    return list(dict.fromkeys(names)), list(dict.fromkeys(keys))


def _inert(fn: ast.FunctionDef) -> set[int]:
    """The nodes no operator touches: the docstring, and the values of dtype-like keywords."""
    skip = set()
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        skip |= {id(node) for node in ast.walk(body[0])}
    for node in ast.walk(fn):
        if isinstance(node, ast.keyword) and node.arg in INERT_KEYWORDS:
            skip |= {id(sub) for sub in ast.walk(node.value)}
        if isinstance(node, ast.withitem):
            skip |= {id(sub) for sub in ast.walk(node.context_expr)}
    return skip


def _replace(tree: ast.AST, target: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is target:
                setattr(parent, field, new)
                return
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if item is target:
                        value[i] = new
                        return


def _statement(tree: ast.AST, target: ast.AST) -> ast.AST:
    """The smallest statement that holds ``target`` (the line a reader compares)."""
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(node, ast.FunctionDef | ast.With | ast.If | ast.For
                                                            | ast.While) \
                and any(sub is target for sub in ast.walk(node)):
            best = node  # ast.walk is breadth first: the last hit is the innermost
    return best if best is not None else target


def mutations(owner: str, name: str):
    """Every mutation of one formula, in a stable order."""
    source = formula_source(owner, name)
    fn = ast.parse(source).body[0]
    names, keys = _scope(fn)
    returned = {id(node.value) for node in ast.walk(fn) if isinstance(node, ast.Return) and node.value is not None}
    negated = {id(node.operand) for node in ast.walk(fn) if isinstance(node, ast.UnaryOp)
               and isinstance(node.op, ast.USub)}
    context = {"names": names, "keys": keys, "owner": owner, "returned": returned, "negated": negated}
    skip = _inert(fn)
    nodes = [node for node in ast.walk(fn) if id(node) not in skip and node is not fn]
    for site, node in enumerate(nodes):
        for operator in OPERATORS:
            for new, family in operator(node, context):
                paper, found = _marked_statement(fn, node, node), _marked_statement(fn, node, new)
                if found == paper:
                    continue
                tree = copy.deepcopy(fn)
                _replace(tree, _same_node(fn, tree, node), new)
                yield Mutation(owner, name, family, site, ast.unparse(ast.fix_missing_locations(tree)), paper, found,
                               ast.unparse(node), ast.unparse(new), change(node, new, family, name))


MARK = "__changed_piece__"


def _marked_statement(fn: ast.FunctionDef, node: ast.AST, piece: ast.AST) -> str:
    """The statement holding ``node``, with ``piece`` in its place between ⟦ ⟧ (the line a reader compares)."""
    tree = copy.deepcopy(fn)
    target = _same_node(fn, tree, node)
    statement = _statement(tree, target)
    marker = ast.Name(MARK, ast.Load())
    if statement is target:
        return f"⟦{ast.unparse(piece)}⟧"
    _replace(tree, target, marker)
    try:
        return ast.unparse(statement).replace(MARK, f"⟦{ast.unparse(piece)}⟧", 1)
    except ValueError:  # a piece of an f-string: the marker cannot stand there; the whole line marked
        _replace(tree, marker, copy.deepcopy(piece))
        return f"⟦{ast.unparse(statement)}⟧"


def _same_node(fn: ast.AST, copied: ast.AST, node: ast.AST) -> ast.AST:
    """In a deep copy of ``fn``, the node that is ``node`` in ``fn``."""
    return list(ast.walk(copied))[_index(fn, node)]


def _index(fn: ast.AST, node: ast.AST) -> int:
    return next(i for i, n in enumerate(ast.walk(fn)) if n is node)


# --------------------------------------------------------------------------------------------------
# Neighbours as implementations
# --------------------------------------------------------------------------------------------------
def _compiled(source: str, name: str, namespace: dict):
    code = compile(source, f"<neighbour of {name}>", "exec")
    local: dict = {}
    exec(code, namespace, local)  # noqa: S102 - the oracle's own source, mutated by our operators
    return local[name]


def _recompiled_users(function: str, namespace: dict) -> tuple[dict, dict]:
    """Every formula method that calls the module function ``function``, compiled against ``namespace``."""
    adapter, model = {}, {}
    for owner, names, into in (("adapter", ADAPTER_FORMULAS, adapter), ("model", MODEL_FORMULAS, model)):
        for name in names:
            source = formula_source(owner, name)
            if function in source:
                into[name] = _compiled(source, name, namespace)
    return adapter, model


def build(owner: str, formula: str, source: str, at: dict | None = None):
    """The NumPy implementation with one formula replaced by ``source``: an adapter instance. ``at`` (a call site:
    {"owner", "formula", "call"}): the replacement only where that formula makes that call; everywhere else the
    paper's formula."""
    module = _module()
    namespace = dict(vars(module))
    methods: dict[str, dict] = {"adapter": {}, "model": {}}
    if owner == "module":
        namespace[formula] = _compiled(source, formula, namespace)
        methods["adapter"], methods["model"] = _recompiled_users(formula, namespace)
    elif at is None:
        methods[owner][formula] = _compiled(source, formula, namespace)
    else:
        renamed = f"{formula}__at_{at['formula']}_{at['call']}"
        methods[owner][renamed] = _compiled(source.replace(f"def {formula}(", f"def {renamed}(", 1), renamed, namespace)
        methods[at["owner"]][at["formula"]] = _compiled(_redirected(at, renamed), at["formula"], namespace)
    model_class = type("NeighbourModel", (module.NumpyModel,), methods["model"])
    adapter_class = type("GeneratedNeighbour", (module.NumpyAdapter,),
                         {**methods["adapter"], "model_class": model_class})
    return adapter_class()


def call_sites(owner: str, formula: str) -> list[dict]:
    """Where the other formulas call ``formula`` (self.f(...) or self.adapter.f(...)): [{owner, formula, call,
    line}], ``call`` the call's index in its formula's walk, ``line`` the statement that makes it."""
    if owner == "module":
        return []
    sites = []
    for caller_owner, names in (("adapter", ADAPTER_FORMULAS), ("model", MODEL_FORMULAS)):
        for name in names:
            fn = ast.parse(formula_source(caller_owner, name)).body[0]
            for index, node in enumerate(ast.walk(fn)):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == formula \
                        and ast.unparse(node.func.value) in ("self", "self.adapter"):
                    sites.append({"owner": caller_owner, "formula": name, "call": index,
                                  "line": ast.unparse(_statement(fn, node))})
    return sites


def _redirected(at: dict, renamed: str) -> str:
    """The calling formula's source with its one call (``at["call"]``) redirected to ``renamed``."""
    fn = ast.parse(formula_source(at["owner"], at["formula"])).body[0]
    call = list(ast.walk(fn))[at["call"]]
    call.func.attr = renamed
    return ast.unparse(fn)


# --------------------------------------------------------------------------------------------------
# The screen: a fixed battery of problems, every formula called
# --------------------------------------------------------------------------------------------------
def _battery():
    """(name, fn(adapter) -> array) for every part and the model, on fixed small problems with padding."""
    from conformance.config import ModelConfig

    rng = np.random.default_rng(20170612)
    x = rng.normal(size=(2, 4, 8))
    memory = rng.normal(size=(2, 5, 8))
    gamma, beta = 1 + 0.3 * rng.normal(size=8), 0.3 * rng.normal(size=8)

    def dense(*shape):
        return rng.normal(scale=0.5, size=shape)

    attn = {f"W_{n}": dense(8, 8) for n in "QKVO"} | {f"b_{n}": dense(8) for n in "QKVO"}
    ffn = {"W1": dense(8, 12), "b1": dense(12), "W2": dense(12, 8), "b2": dense(8)}
    norms = {f"norm{i}.{p}": (gamma if p == "gamma" else beta) + 0.1 * i for i in (1, 2, 3) for p in ("gamma", "beta")}
    enc = {**{f"self_attn.{k}": v for k, v in attn.items()}, **{f"ffn.{k}": v for k, v in ffn.items()},
           **{k: v for k, v in norms.items() if not k.startswith("norm3")}}
    cross = {f"cross_attn.{k}": v[::-1].copy() for k, v in attn.items()}
    dec = {**enc, **cross, "norm3.gamma": norms["norm3.gamma"], "norm3.beta": norms["norm3.beta"]}
    src_mask = np.where(np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]) == 1, 0.0, -np.inf)
    tgt_mask = np.where(np.array([[1, 1, 1, 1], [1, 1, 0, 0]]) == 1, 0.0, -np.inf)
    causal = np.triu(np.full((4, 4), -np.inf), 1)[None] + tgt_mask[:, None, :]
    q, k, v = rng.normal(size=(2, 4, 8)), rng.normal(size=(2, 5, 8)), rng.normal(size=(2, 5, 6))
    cross_mask = np.broadcast_to(src_mask[:, None, :], (2, 4, 5))
    logits, targets = rng.normal(size=(7, 10)), np.array([3, 0, 5, 9, 1, 0, 4])
    paper = {"src_vocab": 37000, "tgt_vocab": 37000, "d_model": 512, "h": 8, "d_ff": 2048, "N": 6,
             "attention_bias": True, "share_embeddings": True, "tie_output": True}
    untied = {**paper, "src_vocab": 100, "tgt_vocab": 90, "share_embeddings": False, "tie_output": False,
              "attention_bias": False}
    configs = [ModelConfig(src_vocab=13, tgt_vocab=13, d_model=8, h=2, d_ff=12, N=2, eps=1e-6),
               ModelConfig(src_vocab=13, tgt_vocab=11, d_model=8, h=2, d_ff=12, N=2, eps=1e-6,
                           share_embeddings=False, tie_output=False)]
    src = np.array([[5, 6, 7, 8, 2, 0], [9, 4, 3, 2, 0, 0]])
    tgt = np.array([[1, 5, 9, 4, 6], [1, 7, 3, 0, 0]])

    def model(a, config, what):
        built = a.build_model(config.as_dict(), 3)
        built.params  # noqa: B018 - drawn from the seed
        # the seed's draw has zero biases and betas and unit gains: moved, so that a slip in any of them shows
        noise = np.random.default_rng(7)
        built._params = {k: v * 4.0 if k.endswith(("E", "E_src", "E_tgt")) else
                         v + 0.3 * noise.normal(size=v.shape) if v.ndim == 1 else v
                         for k, v in sorted(built._params.items())}
        if what == "forward":
            return built.forward(src, tgt)
        if what == "weights":
            return np.concatenate([w.ravel() for _, w in sorted(built.attention_weights(src, tgt).items())])
        return built.greedy_decode(src, 6)

    return [
        ("positional_encoding", lambda a: a.sinusoids(9, 8)),
        ("layer_norm", lambda a: a.layer_norm(x, gamma, beta, 1e-6)),
        ("scaled_dot_product_attention", lambda a: np.concatenate(
            [r.ravel() for r in a.scaled_dot_product_attention(q, k, v, cross_mask)])),
        ("multi_head_attention", lambda a: np.concatenate(
            [r.ravel() for r in a.multi_head_attention(x, memory, memory, attn, 2, cross_mask)])),
        ("masked_self_attention", lambda a: a.multi_head_attention(x, x, x, attn, 2, causal)[0]),
        ("feed_forward", lambda a: a.feed_forward(x, ffn)),
        ("attention_sublayer", lambda a: np.concatenate([
            a.attention_sublayer(x, None, {**attn, "norm.gamma": gamma, "norm.beta": beta}, 2, 1e-6, causal).ravel(),
            a.attention_sublayer(x, memory, {**attn, "norm.gamma": gamma, "norm.beta": beta}, 2, 1e-6,
                                 cross_mask).ravel()])),
        ("ffn_sublayer", lambda a: a.ffn_sublayer(x, {**ffn, "norm.gamma": gamma, "norm.beta": beta}, 1e-6)),
        ("encoder_layer", lambda a: a.encoder_layer(memory, enc, 2, 1e-6, src_mask)),
        ("decoder_layer", lambda a: a.decoder_layer(x, memory, dec, 2, 1e-6, tgt_mask, src_mask)),
        ("learning_rate", lambda a: np.array([a.learning_rate(s, 512, 4000)
                                              for s in (1, 10, 100, 3999, 4000, 4001, 10000, 100000)])),
        ("label_smoothed_loss", lambda a: np.array([a.label_smoothed_loss(logits, targets, 0.1, 0),
                                                    a.label_smoothed_loss(logits, targets, 0.3, 1)])),
        ("parameter_count", lambda a: np.array([a.parameter_count(paper), a.parameter_count(untied)], float)),
        *((f"model_{what}_{i}", lambda a, c=c, w=what: model(a, c, w))
          for i, c in enumerate(configs) for what in ("forward", "weights", "greedy")),
    ]


SCREEN_SECONDS = 0.5  # of CPU time (a loaded machine screens alike): a mutated loop that never ends is cut here


class _TooLong(Exception):
    pass


def _alarm(signum, frame):
    raise _TooLong


def fingerprint(adapter, battery) -> list:
    """Each problem's answer, or None where it fails or runs past SCREEN_SECONDS of CPU time."""
    answers = []
    previous = signal.signal(signal.SIGVTALRM, _alarm)
    try:
        for _, ask in battery:
            signal.setitimer(signal.ITIMER_VIRTUAL, SCREEN_SECONDS)
            try:
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    answer = np.asarray(ask(adapter), dtype=np.float64)
            except (Exception, _TooLong):  # noqa: BLE001 - a neighbour that fails here is no neighbour here
                answer = None
            finally:
                signal.setitimer(signal.ITIMER_VIRTUAL, 0)
            answers.append(answer)
    finally:
        signal.signal(signal.SIGVTALRM, previous)
    return answers


def _digest(answers: list) -> str:
    """Equal for answers equal to float32's precision (two forms of one computation), on every problem. NaN and
    -0.0 are made one value first: their sign and payload bits differ between processors' vector paths, so the
    grouping (and the file) would depend on the machine that wrote it."""
    h = hashlib.sha256()
    with np.errstate(all="ignore"):  # a neighbour's answer beyond float32's range is inf there, as it should be
        for answer in answers:
            h.update(b"none" if answer is None else str(answer.shape).encode() + _canonical(answer).tobytes())
    return h.hexdigest()[:16]


def _canonical(answer: np.ndarray) -> np.ndarray:
    as_float32 = answer.astype(np.float32) + np.float32(0.0)  # -0.0 + 0.0 is +0.0
    return np.where(np.isnan(as_float32), np.float32(np.nan), as_float32)


def _differs(mine: list, paper: list) -> list[str]:
    """The battery's problems where a neighbour answers (finitely) and not as the paper does."""
    return [i for i, (a, b) in enumerate(zip(mine, paper, strict=True))
            if a is not None and b is not None and (a.shape != b.shape or not np.allclose(a, b, rtol=1e-9,
                                                                                           atol=1e-12))]


def generate(progress=None) -> dict:
    """Every mutation, screened: {"oracle": digest, "neighbours": [...]} (``neighbours.json``)."""
    battery = _battery()
    paper = fingerprint(_module().NumpyAdapter(), battery)
    groups: dict[str, dict] = {}
    formulas = [("adapter", n) for n in ADAPTER_FORMULAS] + [("model", n) for n in MODEL_FORMULAS] \
        + [("module", n) for n in MODULE_FORMULAS]
    where = sections()
    tried = 0
    for owner, name in formulas:
        for mutation in mutations(owner, name):
            tried += 1
            try:
                answers = fingerprint(build(owner, name, mutation.source), battery)
            except Exception:  # noqa: BLE001 - a mutation that does not compile is no neighbour
                continue
            differs = _differs(answers, paper)
            if not differs:
                continue
            digest = _digest(answers)
            form = {"key": mutation.key, "family": mutation.family, "words": mutation.words, "paper": mutation.paper,
                    "found": mutation.found, "paper_piece": mutation.paper_piece, "found_piece": mutation.found_piece}
            if digest in groups:
                groups[digest]["forms"].append(form)
                continue
            groups[digest] = {"id": "", "owner": owner, "formula": name, "section": where.get(name, ""),
                              "screen": [battery[i][0] for i in differs], "forms": [form]}
        if progress:
            progress(f"{name}: {tried} mutations tried, {len(groups)} neighbours")
    tried += _specialised(groups, paper, battery, progress)
    neighbours = list(groups.values())
    for i, neighbour in enumerate(neighbours):
        neighbour["id"] = f"{neighbour['formula']}#{i}"
    return {"oracle": oracle_digest(), "tried": tried, "neighbours": neighbours}


def _specialised(groups: dict, paper: list, battery, progress=None) -> int:
    """Each neighbour of a formula called from several places, at one call site only (a slip in the decoder's
    feed-forward sublayer, not the encoder's): added to ``groups``; returns how many were tried."""
    tried = 0
    for neighbour in list(groups.values()):
        sites = call_sites(neighbour["owner"], neighbour["formula"])
        if len(sites) < 2:
            continue
        form = neighbour["forms"][0]
        source = mutated_source(neighbour["owner"], neighbour["formula"], form)
        for site in sites:
            tried += 1
            at = {k: site[k] for k in ("owner", "formula", "call", "line")}
            try:
                answers = fingerprint(build(neighbour["owner"], neighbour["formula"], source, at), battery)
            except Exception:  # noqa: BLE001 - no neighbour
                continue
            differs = _differs(answers, paper)
            if not differs:
                continue
            digest = _digest(answers)
            placed = {**form, "at": at}
            if digest in groups:
                groups[digest]["forms"].append(placed)
                continue
            groups[digest] = {**neighbour, "screen": [battery[i][0] for i in differs], "forms": [placed]}
    if progress:
        progress(f"call sites: {tried} tried, {len(groups)} neighbours")
    return tried


def mutated_source(owner: str, formula: str, form: dict) -> str:
    """The formula's source with one form's change made again: the node at its site, checked to be the piece the
    form says it changes, replaced by the form's piece (a stale file fails here, never computes something else)."""
    fn = ast.parse(formula_source(owner, formula)).body[0]
    skip = _inert(fn)
    nodes = [node for node in ast.walk(fn) if id(node) not in skip and node is not fn]
    site = int(form["key"].split(":")[1])
    if site >= len(nodes) or ast.unparse(nodes[site]) != form["paper_piece"]:
        raise LookupError(f"neighbour {form['key']} does not fit the oracle's {formula}: {stale() or 'regenerate'}")
    _replace(fn, nodes[site], ast.parse(form["found_piece"], mode="eval").body)
    return ast.unparse(ast.fix_missing_locations(fn))


def write(path: Path = PATH, progress=None) -> dict:
    data = generate(progress)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return data


def stale(path: Path = PATH) -> str | None:
    """Why the file cannot be used as it is (absent, or generated from another oracle), or None."""
    if not path.exists():
        return f"{path.name} is missing: run python -m conformance.diagnosis.neighbourhood --write"
    recorded = json.loads(path.read_text(encoding="utf-8")).get("oracle")
    if recorded != oracle_digest():
        return (f"{path.name} was generated from another version of the oracle ({recorded}, now {oracle_digest()}):"
                " run python -m conformance.diagnosis.neighbourhood --write")
    return None


