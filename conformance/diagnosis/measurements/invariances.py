"""Invariances probed on purpose: what the output should depend on and does not, what it should not and does.

Each probe changes one thing of a purpose-built input (a later target token, one source position, the padding
token's embedding, the other rows of the batch, the order of the tokens, one layer's weights) and compares which
outputs move, in the candidate and in the paper (the oracle, run on the same inputs: the paper's answer is
computed, never assumed). A difference found at two sizes is a finding, in the words of what moved. The model's
probes describe the failing questions that build a model; a layer's, the questions that call that layer.
"""

from __future__ import annotations

import numpy as np

from conformance.diagnosis.measurements.base import Finding, measurement
from conformance.problems import oracle
from conformance.problems.scenarios import (
    LOADED_MODEL,
    LayerSizes,
    activations,
    layer_weights,
    loaded_model,
    model_weights,
    token_ids,
)

MODEL_PARTS = ("build_model",)


# -- the model --------------------------------------------------------------------------------------------


def _model_problem(candidate, d_model: int, N: int, S: int, T: int, seed: int):
    """(config, weights, src, tgt_in, src_keep, tgt_keep): three rows, the first unpadded, the others padded."""
    from conformance.config import ModelConfig

    config = candidate.fit(ModelConfig(src_vocab=20, tgt_vocab=20, d_model=d_model, h=2, d_ff=4 * d_model, N=N,
                                       attention_bias=True))
    rng = np.random.default_rng(seed)
    weights = model_weights(config, rng)
    src_keep = np.arange(S)[None] < np.array([S, S - 2, S - 3])[:, None]
    tgt_keep = np.arange(T)[None] < np.array([T, T - 1, T - 2])[:, None]
    src = token_ids(rng, config, 3, S, keep=src_keep)
    tgt_in = token_ids(rng, config, 3, T, keep=tgt_keep, start=config.bos_id)
    return config, weights, src, tgt_in, src_keep, tgt_keep


SIZES = ((16, 2, 6, 5, 5), (8, 2, 7, 6, 6))  # (d_model, N, S, T, seed) of the two problems


class Pair:
    """The candidate's model and the oracle's on one problem."""

    def __init__(self, candidate, size):
        self.config, self.weights, self.src, self.tgt_in, self.src_keep, self.tgt_keep = _model_problem(
            candidate, *size)
        self.candidate = candidate
        self.model = loaded_model(candidate, self.config, self.weights)
        self.oracle = oracle.OracleModel(self.config, self.weights)
        base = self.model.forward(self.src, self.tgt_in)
        if not np.array_equal(base, self.model.forward(self.src, self.tgt_in)):
            raise ValueError("two identical calls differ: no invariance can be probed")
        self.scale = max(1.0, float(np.abs(base).max()))

    def moved(self, before, after) -> np.ndarray:
        """Per (row, position): did the output move (beyond float rounding)?"""
        diff = np.abs(np.asarray(after, np.float64) - np.asarray(before, np.float64))
        return diff.reshape(*diff.shape[:2], -1).max(-1) > 1e-5 * self.scale


def _with_weights(pair: Pair, weights, method: str, *args):
    """``method`` of the candidate's model and of the oracle's with other weights (the candidate's model loads
    them, answers, and gets its own back)."""
    try:
        pair.model.load_weights(weights)
        mine = getattr(pair.model, method)(*args)
    finally:
        pair.model.load_weights(pair.weights)
    return mine, getattr(oracle.OracleModel(pair.config, weights), method)(*args)


def _change_token(ids, keep, position: int, config, rng) -> np.ndarray:
    """``ids`` with the real token at ``position`` of every row that has one replaced by another ordinary token."""
    out = ids.copy()
    first = max(config.pad_id, config.bos_id, config.eos_id) + 1
    for row in range(len(ids)):
        if keep[row, position]:
            choices = [t for t in range(first, config.tgt_vocab) if t != ids[row, position]]
            out[row, position] = rng.choice(choices)
    return out


def future_read(pair: Pair) -> dict | None:
    """Positions t < j whose logits move when target position j changes (the paper: none)."""
    j = pair.tgt_in.shape[1] - 2
    changed = _change_token(pair.tgt_in, pair.tgt_keep, j, pair.config, np.random.default_rng(1))
    mine = pair.moved(pair.model.forward(pair.src, pair.tgt_in), pair.model.forward(pair.src, changed))
    theirs = pair.moved(pair.oracle.forward(pair.src, pair.tgt_in), pair.oracle.forward(pair.src, changed))
    earlier = (np.arange(pair.tgt_in.shape[1]) < j)[None] & pair.tgt_keep
    if (mine & earlier).any() and not (theirs & earlier).any():
        return {"position": j}
    return None


def source_reach(pair: Pair) -> str | None:
    """How the logits depend on the source: "none" (not at all), "causal" (target t only on source 0..t)."""
    rng = np.random.default_rng(2)
    real = pair.tgt_keep
    every = pair.src.copy()
    for j in range(pair.src.shape[1]):
        every = _change_token(every, pair.src_keep, j, pair.config, rng)
    mine = pair.moved(pair.model.forward(pair.src, pair.tgt_in), pair.model.forward(every, pair.tgt_in))
    theirs = pair.moved(pair.oracle.forward(pair.src, pair.tgt_in), pair.oracle.forward(every, pair.tgt_in))
    if not (mine & real).any() and theirs[real].all():
        return "none"
    # One memory position changed, the rest held (through the encoder a source token reaches every position):
    # a middle position of the unpadded first row, target positions 0 and 1 before it, the rest after.
    j = 2
    memory = np.asarray(pair.oracle.encode(pair.src), np.float32)
    moved = memory.copy()
    moved[:, j] += rng.normal(0, 1, moved.shape[-1]).astype(np.float32)
    mine, theirs = (pair.moved(model.decode(pair.tgt_in, memory, pair.src),
                               model.decode(pair.tgt_in, moved, pair.src))[0] for model in (pair.model, pair.oracle))
    before = np.arange(pair.tgt_in.shape[1]) < j
    if theirs.all() and not mine[before].any() and mine[~before].all():
        return "causal"
    return None


def encoder_reach(pair: Pair) -> bool:
    """Does the memory at source position i ignore every later source position (the paper: every position reads
    all)? Asked of the unpadded sentence alone, each position changed in turn: in a batch, a position another
    sentence pads may be hidden from all of them (a padding mask reduced over the batch), and a mask that hides a
    few keys from every query hides some later positions without being causal."""
    src, keep = pair.src[:1], pair.src_keep[:1]
    for j in range(1, src.shape[1]):
        later = _change_token(src, keep, j, pair.config, np.random.default_rng(3 + j))
        mine = pair.moved(pair.model.encode(src), pair.model.encode(later))[0]
        theirs = pair.moved(pair.oracle.encode(src), pair.oracle.encode(later))[0]
        if not (theirs[:j].all() and not mine[:j].any()):
            return False
    return True


def padding_read(pair: Pair) -> str | None:
    """Which stack's real outputs move when the padding token's embedding does: "encoder", "decoder", or None."""
    moved = {name: value.copy() for name, value in pair.weights.items()}
    table = "E" if pair.config.share_embeddings else "E_src"
    pad = pair.config.pad_id
    moved[table][pad] = -moved[table][pad] + np.random.default_rng(4).normal(0, 1, moved[table].shape[1])
    mine_memory = _with_weights(pair, moved, "encode", pair.src)
    base_memory = pair.model.encode(pair.src), pair.oracle.encode(pair.src)
    mine, theirs = (pair.moved(b, a) for b, a in zip(base_memory, mine_memory, strict=True))
    if (mine & pair.src_keep).any() and not (theirs & pair.src_keep).any():
        return "encoder"
    after = _with_weights(pair, moved, "forward", pair.src, pair.tgt_in)
    before = pair.model.forward(pair.src, pair.tgt_in), pair.oracle.forward(pair.src, pair.tgt_in)
    # The tied output reads E[pad] in the padding column, and a log-softmax's normaliser reads that column too:
    # the other columns, centred per position, are what the decoder's states decide.
    mine, theirs = (pair.moved(_centred(b, pad), _centred(a, pad)) for b, a in zip(before, after, strict=True))
    if (mine & pair.tgt_keep).any() and not (theirs & pair.tgt_keep).any() and _more_padding_read(pair):
        return "decoder"
    return None


def _more_padding_read(pair: Pair) -> bool:
    """Do the real logits move when one more padding token is appended to the source (the paper: never)? E[pad] also
    reaches the logits through the output layer that shares its table (a softmax's normaliser, a table read through
    a reshape): only padding that moves them with E unchanged says the decoder reads the padded memory."""
    pad = pair.config.pad_id
    longer = np.concatenate([pair.src, np.full((pair.src.shape[0], 1), pad, pair.src.dtype)], axis=1)
    mine = [_centred(pair.model.forward(src, pair.tgt_in), pad) for src in (pair.src, longer)]
    return bool((pair.moved(*mine) & pair.tgt_keep).any())


def _centred(logits, pad: int) -> np.ndarray:
    kept = np.delete(np.asarray(logits, np.float64), pad, axis=-1)
    return kept - kept.mean(-1, keepdims=True)


def batch_read(pair: Pair) -> str | None:
    """Does a row's output change when it is run alone (the paper: never)? Then what it depends on: "place" when the
    same sentences in another order give the first its own logits at another row only (its row index is read: a
    table indexed by the batch axis), "others" when they give it its logits at any row (the other sentences are
    read: a mask or a statistic taken over the batch)."""
    full = pair.model.forward(pair.src, pair.tgt_in)
    alone = np.concatenate([pair.model.forward(pair.src[i:i + 1], pair.tgt_in[i:i + 1]) for i in range(len(pair.src))])
    if not (pair.moved(full, alone) & pair.tgt_keep).any():
        return None
    for row in range(1, len(pair.src)):  # the first sentence at each other row, the same sentences beside it
        order = np.roll(np.arange(len(pair.src)), row)
        rolled = pair.model.forward(pair.src[order], pair.tgt_in[order])
        if (pair.moved(full[:1], rolled[row:row + 1])[0] & pair.tgt_keep[0]).any():
            return "place"
    return "others"


def positions_ignored(pair: Pair) -> bool:
    """Is the memory of the unpadded row permuted exactly as its tokens are (no positional information)?"""
    order = np.roll(np.arange(pair.src.shape[1]), 1)
    permuted = pair.src.copy()
    permuted[0] = pair.src[0, order]
    mine = np.asarray(pair.model.encode(pair.src), np.float64)[0, order]
    again = np.asarray(pair.model.encode(permuted), np.float64)[0]
    theirs = np.asarray(pair.oracle.encode(pair.src), np.float64)[0, order]
    paper_again = np.asarray(pair.oracle.encode(permuted), np.float64)[0]
    equivariant = np.abs(mine - again).max() <= 1e-5 * pair.scale
    return bool(equivariant and np.abs(theirs - paper_again).max() > 1e-3 * pair.scale)


def layers_unused(pair: Pair) -> list[str]:
    """The layers whose weights can change without the logits moving (the paper: every layer moves them)."""
    unused = []
    for stack in ("encoder", "decoder"):
        for layer in range(pair.config.N):
            prefix = f"{stack}.{layer}."
            moved = {name: (value * 1.5 + 0.1 if name.startswith(prefix) else value)
                     for name, value in pair.weights.items()}
            after = _with_weights(pair, moved, "forward", pair.src, pair.tgt_in)
            before = pair.model.forward(pair.src, pair.tgt_in), pair.oracle.forward(pair.src, pair.tgt_in)
            mine, theirs = (pair.moved(b, a) for b, a in zip(before, after, strict=True))
            if not (mine & pair.tgt_keep).any() and (theirs & pair.tgt_keep).any():
                unused.append(f"{stack}.{layer}")
    return unused


def _at_both(pairs: list[Pair], probe):
    """``probe(pair)`` at the two sizes, when it finds the same (truthy) thing at both; else None."""
    found = []
    for pair in pairs:
        try:
            found.append(probe(pair))
        except Exception:  # noqa: BLE001 - a probe that cannot run finds nothing
            return None
    first = found[0]
    return first if first and all(f == first for f in found[1:]) else None


# The half of the model each probed reading is about: a question about the memory alone (encode) is not described by
# the decoder's, nor one about decode with the paper's memory by the encoder's; the whole model's questions by both.
SIDES = {"future": "decoder", "source none": "decoder", "source causal": "decoder", "padding decoder": "decoder",
         "encoder causal": "encoder", "padding encoder": "encoder", "positions": "encoder"}
MODEL_TEXTS = {
    "future": "the logits at a position change when a later target token changes: the decoder reads the future",
    "source none": "the logits do not change when every source token does: the decoder does not read the source",
    "source causal": "target position t reads only memory positions 0..t: changing the memory at position j moves"
                     " only the target positions from j on (the paper's cross-attention reads every source position)",
    "encoder causal": "the memory at source position i does not change when a later source token does: the encoder"
                      " reads positions 0..i only (the paper's encoder reads every position)",
    "padding encoder": "the memory at real positions changes when the padding token's embedding does: the encoder"
                       " reads padded positions",
    "padding decoder": "the logits at real positions change when the padding token's embedding does (the encoder's"
                       " memory does not): the decoder reads padded positions",
    "batch others": "a sentence's logits depend on the other sentences of the batch (run alone it gets other logits;"
                    " the same sentences in another order give it the same): rows are not independent",
    "batch place": "a sentence's logits depend on its place in the batch, its row index (the same sentences in"
                   " another order give it other logits): rows are not independent",
    "positions": "the memory is permuted exactly as the source tokens are: no positional information reaches the"
                 " encoder",
}


@measurement("model_invariances", "probe", (*LOADED_MODEL, "model.forward", "model.encode"),
             "the decoder reads the future; does not read the source; target position t reads source 0..t; the"
             " encoder reads positions 0..i only; padded positions read; rows not independent; no positional"
             " information; a layer whose weights are not used", reads=("build_model",))
def model_invariances(candidate):
    probes = {
        "future": lambda pair: bool(future_read(pair)),
        "source": source_reach,
        "encoder causal": encoder_reach,
        "padding": padding_read,
        "batch": batch_read,
        "positions": positions_ignored,
    }
    try:
        pairs = [Pair(candidate, size) for size in SIZES]
    except Exception:  # noqa: BLE001 - no model to probe, or one that answers twice differently
        return []
    found = []
    for name, probe in probes.items():
        result = _at_both(pairs, probe)
        if not result:
            continue
        key = name if result is True else f"{name} {result}"
        found.append(Finding(MODEL_TEXTS[key] + " (probed on two model sizes)", f"model_invariances:{key}",
                             MODEL_PARTS, {"probe": key, **({"side": SIDES[key]} if key in SIDES else {})}))
    unused = _at_both(pairs, layers_unused)
    if unused:
        found.append(Finding(f"the logits do not change when the weights of {', '.join(unused)} do: those layers are"
                             " not used (probed on two model sizes)", f"model_invariances:unused {unused}",
                             MODEL_PARTS, {"probe": "layers unused", "layers": unused}))
    return found


# -- the layers -------------------------------------------------------------------------------------------


def _layer(candidate, stack: str, size: LayerSizes):
    rng = size.rng()
    weights = layer_weights(size, stack, rng)
    x = activations(rng, size.B, size.S if stack == "encoder" else size.T, size.d_model)
    memory = activations(rng, size.B, size.S, size.d_model)
    keep = np.ones((size.B, x.shape[1]), bool)
    keep[1, -2:] = False
    src_keep = np.ones((size.B, size.S), bool)
    src_keep[1, -2:] = False
    def run(who: str, x=x, memory=memory, weights=weights):
        """The candidate's layer (``who`` "candidate") or the paper's on these inputs."""
        layer = candidate if who == "candidate" else oracle
        if stack == "encoder":
            return layer.encoder_layer(x, weights, size.h, size.eps, keep)
        return layer.decoder_layer(x, memory, weights, size.h, size.eps, keep, src_keep)

    return x, memory, keep, weights, run


LAYER_SIZES = (LayerSizes(B=2, S=6, T=5, h=2, d_k=4, d_ff=32, bias=True, seed=61),
               LayerSizes(B=2, S=7, T=6, h=2, d_k=6, d_ff=48, bias=True, seed=62))


def _moved(before, after) -> np.ndarray:
    before, after = np.asarray(before, np.float64), np.asarray(after, np.float64)
    return np.abs(after - before).max(-1) > 1e-5 * max(1.0, float(np.abs(before).max()))


def reach(x, base, run, rng) -> list[str]:
    """Each position of row 0 changed in turn (the paper's layer moves every other position): "isolated" when none
    moves another, "causal" when each moves none before it; else nothing is said."""
    earlier_moved, later_moved = False, False
    for j in range(x.shape[1]):
        changed = x.copy()
        changed[0, j] += rng.normal(0, 1, changed.shape[-1]).astype(np.float32)
        mine, theirs = (_moved(base[w], run(w, x=changed))[0] for w in ("candidate", "paper"))
        others = np.arange(x.shape[1]) != j
        if not theirs[others].all():
            return []
        earlier_moved |= bool(mine[:j].any())
        later_moved |= bool(mine[j + 1:].any())
    if earlier_moved:
        return []
    return ["causal"] if later_moved else ["isolated"]


def layer_probe(candidate, stack: str, size: LayerSizes) -> list[str]:
    x, memory, keep, weights, run = _layer(candidate, stack, candidate.fit(size))
    found = []
    rng = np.random.default_rng(size.seed)
    whom = ("candidate", "paper")
    base = {who: run(who) for who in whom}
    # padded positions of row 1 changed: real outputs must not move
    padded = x.copy()
    padded[1, -2:] += rng.normal(0, 1, padded[1, -2:].shape).astype(np.float32)
    mine, theirs = (_moved(base[w], run(w, x=padded)) for w in whom)
    if (mine & keep).any() and not (theirs & keep).any():
        found.append("padded")
    # the last position of row 0 changed: which earlier positions move
    later = x.copy()
    later[0, -1] += rng.normal(0, 1, later.shape[-1]).astype(np.float32)
    mine, theirs = (_moved(base[w], run(w, x=later))[0, :-1] for w in whom)
    if mine.any() and not theirs.any():
        found.append("future")
    if theirs.all() and not mine.any():
        found += reach(x, base, run, rng)
    # row 0's positions permuted: the paper's layer (no positions inside) permutes its output the same way
    order = np.roll(np.arange(x.shape[1]), 1)
    permuted = x.copy()
    permuted[0] = x[0, order]
    if stack == "encoder":
        mine = np.asarray(base["candidate"], np.float64)[0, order]
        again = np.asarray(run("candidate", x=permuted), np.float64)[0]
        paper = np.asarray(base["paper"], np.float64)[0, order]
        paper_again = np.asarray(run("paper", x=permuted), np.float64)[0]
        scale = max(1.0, float(np.abs(mine).max()))
        paper_equivariant = np.abs(paper - paper_again).max() <= 1e-6 * scale
        if paper_equivariant and np.abs(mine - again).max() > 1e-4 * scale:
            found.append("positions")
    if stack == "decoder":
        moved_memory = memory + rng.normal(0, 1, memory.shape).astype(np.float32)
        mine, theirs = (_moved(base[w], run(w, memory=moved_memory)) for w in whom)
        if not (mine & keep).any() and (theirs & keep).all():
            found.append("memory")
        start = dict(weights, **{"self_attn.W_V": (weights["self_attn.W_V"] * 2 + 0.5).astype(np.float32)})
        mine, theirs = (_moved(base[w], run(w, weights=start))[:, 0] for w in whom)
        if theirs.all() and not mine.any():
            found.append("start")
    how = wiring(lambda who, x, w: run(who, x=x, weights=w), x, weights)
    if how:
        found.append(how)
    unused = unused_weights(lambda who, w: run(who, weights=w), weights, rng)
    found += [f"unused {name}" for name in unused]
    return found


def unused_weights(run, weights: dict, rng) -> list[str]:
    """The weights a part can be given other values of without its output moving (the paper reads every one)."""
    base = {who: np.asarray(run(who, weights), np.float64) for who in ("candidate", "paper")}
    unused = []
    for name in sorted(weights):
        moved = dict(weights)
        moved[name] = (weights[name] * 1.5 + rng.normal(0, 0.5, np.shape(weights[name]))).astype(np.float32)
        mine, paper = (np.abs(np.asarray(run(who, moved), np.float64) - base[who]).max() for who in base)
        scale = max(1.0, float(np.abs(base["paper"]).max()))
        if mine <= 1e-6 * scale < 1e-3 * scale < paper:
            unused.append(name)
    return unused


def _switched_off(weights: dict) -> dict:
    """Every sublayer's output projection zero (its output 0), every LayerNorm gamma 1 and beta 0."""
    off = dict(weights)
    for name, value in weights.items():
        leaf = name.rsplit(".", 1)[-1]
        if leaf in ("W_O", "b_O", "W2", "b2", "beta"):
            off[name] = np.zeros_like(value)
        elif leaf == "gamma":
            off[name] = np.ones_like(value)
    return off


def wiring(run_with, x, weights) -> str | None:
    """With every sublayer's output zero: "identity" when the layer returns its input (no norm on the residual
    path), "constant" when its output no longer depends on its input (no residual path); the paper's returns
    LayerNorm(LayerNorm(x)), which is neither."""
    off = _switched_off(weights)
    mine, paper = (np.asarray(run_with(who, x, off), np.float64) for who in ("candidate", "paper"))
    other = (x + np.random.default_rng(9).normal(0, 1, x.shape)).astype(np.float32)  # not an affine map of x
    mine_other, paper_other = (np.asarray(run_with(who, other, off), np.float64) for who in ("candidate", "paper"))
    scale = max(1.0, float(np.abs(x).max()))
    if np.abs(mine - x).max() <= 1e-5 * scale < 1e-2 * scale < np.abs(paper - x).max():
        return "identity"
    if np.abs(mine - mine_other).max() <= 1e-5 * scale < 1e-2 * scale < np.abs(paper - paper_other).max():
        return "constant"
    return None


LAYER_TEXTS = {
    "padded": "its output at real positions changes when the input at padded positions does: padded keys are read",
    "future": "its output at a position changes when a later position's input does: it reads the future",
    "causal": "its output at position i does not change when a later position's input does: it reads 0..i only",
    "isolated": "its output at a position changes with that position's input only (the first's and the last's"
                " changed): it reads no other position (every other key hidden, or attention that adds nothing)",
    "positions": "its output is not permuted as its input is (the paper's layer, with no positions inside, is):"
                 " it depends on where a token sits",
    "memory": "its output does not change when the memory does: it does not read the encoder's output",
    "identity": "with every sublayer's output zero it returns its input unchanged (the paper's returns"
                " LayerNorm(LayerNorm(x))): no LayerNorm on the residual path, the norms sit inside the sublayers'"
                " branches (pre-norm)",
    "constant": "with every sublayer's output zero its output no longer depends on its input: no residual"
                " connection around the sublayers",
    "start": "its output at position 0 does not change when the self-attention's W_V does: the start position"
             " reads no value, its own included (the diagonal is hidden)",
}


def _layer_findings(candidate, stack: str) -> list[Finding]:
    try:
        first, second = (set(layer_probe(candidate, stack, size)) for size in LAYER_SIZES)
    except Exception:  # noqa: BLE001 - a layer that cannot run on the probe finds nothing
        return []
    part = f"{stack}_layer"
    found = [Finding(f"the candidate's {part}: {LAYER_TEXTS[name]} (probed at two sizes)", f"{part}:{name}", (part,),
                     {"probe": name}) for name in sorted(first & second) if not name.startswith("unused ")]
    unused = sorted(name.removeprefix("unused ") for name in first & second if name.startswith("unused "))
    if unused:
        found.append(Finding(f"the candidate's {part}: its output does not change when {', '.join(unused)} do: those"
                             " weights are not read, or their effect cancels (probed at two sizes)",
                             f"{part}:unused {unused}", (part,), {"probe": "unused weights", "weights": unused}))
    return found


@measurement("encoder_layer_invariances", "probe", ("encoder_layer",),
             "padded keys are read; reads positions 0..i only, or no other position; depends on where a token sits;"
             " with its sublayers off returns its input (pre-norm) or a constant (no residual); <weights> not read")
def encoder_layer_invariances(candidate):
    return _layer_findings(candidate, "encoder")


@measurement("decoder_layer_invariances", "probe", ("decoder_layer",),
             "padded keys are read; reads the future; does not read the memory; the start position reads nothing"
             " (the diagonal hidden); with its sublayers off returns its input or a constant; <weights> not read")
def decoder_layer_invariances(candidate):
    return _layer_findings(candidate, "decoder")



# -- the parts with weights: which of them are read ------------------------------------------------------


def _part_runs(candidate, part: str, d_model: int, seed: int):
    from conformance.weights import attention_shapes, ffn_shapes, random_weights

    rng = np.random.default_rng(seed)
    x = activations(rng, 2, 5, d_model)
    if part == "feed_forward":
        weights = random_weights(ffn_shapes(d_model, 4 * d_model), rng)

        def run(who, weights):
            return (candidate if who == "candidate" else oracle).feed_forward(x, weights)
    else:
        weights = random_weights(attention_shapes(d_model, bias=True), rng)
        memory = activations(rng, 2, 6, d_model)

        def run(who, weights):
            if who == "candidate":
                return candidate.multi_head_attention(x, memory, memory, weights, 2, None)[0]
            return oracle.multi_head_attention(x, memory, memory, weights, 2)[0]
    return run, weights, rng


def _part_unused(candidate, part: str) -> list[Finding]:
    try:
        found = [set(unused_weights(*_part_runs(candidate, part, d, 80 + d))) for d in (8, 12)]
    except Exception:  # noqa: BLE001 - a part that cannot run on the probe finds nothing
        return []
    unused = sorted(found[0] & found[1])
    if not unused:
        return []
    return [Finding(f"the candidate's {part}: its output does not change when {', '.join(unused)} do: those weights"
                    " are not read, or their effect cancels (probed at two sizes)", f"{part}:unused {unused}", (part,),
                    {"probe": "unused weights", "weights": unused})]


@measurement("attention_weights_read", "probe", ("multi_head_attention",),
             "its output does not change when <W_O> does: those weights are not read")
def attention_weights_read(candidate):
    return _part_unused(candidate, "multi_head_attention")


@measurement("ffn_weights_read", "probe", ("feed_forward",),
             "its output does not change when <b1> does: those weights are not read")
def ffn_weights_read(candidate):
    return _part_unused(candidate, "feed_forward")
