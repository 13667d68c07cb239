"""The shapes the lessons print: the explorer's "c a b e d", the guided practice, the base model.

"Shapes are (batch, tokens, numbers) or (batch, heads, queries, keys)" ("The original transformer,
step by step", explorer). Each check reads the part's raw output (before the suite's own validation)
so that a wrong shape is a *failure* of the claim, not an adapter error. Multi-head attention weights
come from ``multi_head_attention`` on the layer's inputs with the mask that layer uses; the FFN's hidden
tensor (1, 5, 256), the per-head Q, K, V (1, 4, 5, 16) and the embedded inputs (1, 5, 64), which no part returns,
are measured by the checks of §3.3, §3.2.2 and §3.4.

Every expected shape is a fact of fixtures/published.toml, read by id (the quoted sentence is there).
"""

import functools

import numpy as np
import pytest

from conformance.compare import assert_shape, assert_true
from conformance.config import ModelConfig, base_config, toy_config
from conformance.diagnosis.causal_patterns import causal_pattern_cause
from conformance.paper import claims, published
from conformance.problems import oracle
from conformance.problems.scenarios import (
    LOADED_MODEL,
    activations,
    layer_weight_shapes,
    loaded_model,
    model_weights,
)
from conformance.tolerances import ELEMENTWISE, for_candidate
from conformance.weights import attention_shapes, random_weights

SECTION = "Shapes (explorer, guided practice, base model)"

TOY = toy_config()  # vocabulary 13 (pad 0, <s> 1, </s> 2, a..j 3..12), d_model 64, 4 heads, d_ff 256
# Explorer step 1: "c a b e d ... 5 3 4 7 6"; step 10: "<s> d e b a c ... 1 6 7 4 3 5".
EXPLORER_SRC = [[5, 3, 4, 7, 6]]
EXPLORER_TGT_IN = [[1, 6, 7, 4, 3, 5]]
# Guided practice: "a source of 7 letters and a decoder input of 8 tokens: the start token and 7 letters".
PRACTICE_SRC = [[3, 4, 5, 6, 7, 8, 9]]  # a b c d e f g
PRACTICE_TGT_IN = [[1, 9, 8, 7, 6, 5, 4, 3]]  # <s> g f e d c b a
# "Vanilla Transformer": "[I, love, you] -> [21, 135, 48]", "With vocabulary size V = 30,000";
# the decoder input "[<BOS>, ich, liebe, dich]" has no ids in the text, so these are made up.
VANILLA_SRC = [[21, 135, 48]]
VANILLA_TGT_IN = [[1, 4021, 5135, 6048]]
# The document's model has 6 + 6 layers; one of each keeps this check fast and changes no shape.
VANILLA = base_config(N=1).replace(src_vocab=30000, tgt_vocab=30000)


# --------------------------------------------------------------------------------------------------
# Raw outputs: the shape as the adapter returned it, in the suite's batch-first layout
# --------------------------------------------------------------------------------------------------


def ids(candidate, values) -> np.ndarray:
    return candidate.to_layout(np.asarray(values, dtype=np.int64))


@functools.lru_cache(maxsize=4)
def built(candidate, config):
    return candidate.build_model(config, seed=0).model


def raw_memory(candidate, config, src):
    candidate.require("model.encode", max_len=len(src[0]))  # a raw call: the declaration enforced here
    return candidate.from_layout(candidate.call("model.encode", built(candidate, config), ids(candidate, src)))


def raw_logits(candidate, config, src, tgt_in):
    candidate.require("model.forward", max_len=max(len(src[0]), len(tgt_in[0])))
    model = built(candidate, config)
    return candidate.from_layout(candidate.call("model.forward", model, ids(candidate, src), ids(candidate, tgt_in)))


def raw_attention_weights(candidate, config, Lq: int, Lk: int, keep: np.ndarray | None):
    """The (B, h, Lq, Lk) weights multi_head_attention returns for random inputs of these lengths."""
    rng = np.random.default_rng(Lq * 100 + Lk)
    weights = random_weights(attention_shapes(config.d_model, bias=config.attention_bias), rng)
    query, key = activations(rng, 1, Lq, config.d_model), activations(rng, 1, Lk, config.d_model)
    c = candidate
    result = c.call("multi_head_attention", c.adapter, c.to_layout(c.cast(query)), c.to_layout(c.cast(key)),
                    c.to_layout(c.cast(key)), c.cast_weights(weights), config.h, c.to_mask(keep))
    return c.expect_pair(result, f"multi_head_attention(h={config.h})")[1]


def raw_decoder_layer(candidate, config, T: int, S: int):
    rng = np.random.default_rng(T * 100 + S)
    weights = random_weights(layer_weight_shapes("decoder", config.d_model, config.d_ff, bias=config.attention_bias),
                             rng)
    y, memory = activations(rng, 1, T, config.d_model), activations(rng, 1, S, config.d_model)
    c = candidate
    out = c.call("decoder_layer", c.adapter, c.to_layout(c.cast(y)), c.to_layout(c.cast(memory)),
                 c.cast_weights(weights), config.h, config.eps, c.to_mask(np.ones((1, T), bool)),
                 c.to_mask(np.ones((1, S), bool)))
    return c.from_layout(out)


def raw_encoder_layer(candidate, config, S: int):
    rng = np.random.default_rng(S)
    weights = random_weights(layer_weight_shapes("encoder", config.d_model, config.d_ff, bias=config.attention_bias),
                             rng)
    c = candidate
    out = c.call("encoder_layer", c.adapter, c.to_layout(c.cast(activations(rng, 1, S, config.d_model))),
                 c.cast_weights(weights), config.h, config.eps, c.to_mask(np.ones((1, S), bool)))
    return c.from_layout(out)


def causal(T: int) -> np.ndarray:
    return oracle.causal_keep(T)


# --------------------------------------------------------------------------------------------------
# The checks: one per printed shape
# --------------------------------------------------------------------------------------------------

MODEL = pytest.mark.requires(*LOADED_MODEL[:1])  # build_model only: the shapes need no loaded weights
MHA = pytest.mark.requires("multi_head_attention")


def observe(candidate, what: str, config, src, tgt_in):
    S, T, config = len(src[0]), len(tgt_in[0]), candidate.fit(config)
    if what == "memory":
        return raw_memory(candidate, config, src)
    if what == "logits":
        return raw_logits(candidate, config, src, tgt_in)
    if what == "encoder self-attention weights":
        return raw_attention_weights(candidate, config, S, S, None)
    if what == "decoder masked self-attention weights":
        return raw_attention_weights(candidate, config, T, T, causal(T))
    if what == "cross-attention weights":
        return raw_attention_weights(candidate, config, T, S, None)
    if what == "decoder layer output":
        return raw_decoder_layer(candidate, config, T, S)
    if what == "encoder layer output":
        return raw_encoder_layer(candidate, config, S)
    raise ValueError(what)


ENCODE = [MODEL, pytest.mark.requires("model.encode")]
FORWARD = [MODEL, pytest.mark.requires("model.forward")]


def steps(table: dict[str, tuple[str, str, list]]):
    """{id: (what, fact id, marks)} -> parameters whose check id reads ``..._shape[step=<id>]``."""
    return [pytest.param(step, marks=marks, id=step) for step, (_, _, marks) in table.items()]


def published_shape(check, fact_id: str, *, claim: bool = True) -> tuple[int, ...]:
    """The fact's shape, batch-first: symbols ("S", "T") from its args; an unbatched (T, S) per-head
    shape of the overview document becomes (1, h, T, S), an unbatched (S, 512) becomes (1, S, 512)."""
    entry = published.fact(fact_id)
    value = check.published(fact_id) if claim else entry["value"]  # an input is not a claim of this check
    args = entry["args"]
    shape = tuple(args.get(v, v) if isinstance(v, str) else v for v in value)
    if args.get("tensor", "").endswith("_per_head"):
        shape = (args["h"], *shape)
    return (1, *shape) if args.get("unbatched") else shape


EXPLORER = {
    "memory": ("memory", "explorer.step9.shape", ENCODE),  # (1, 5, 64)
    "logits": ("logits", "explorer.step13.shape", FORWARD),  # (1, 6, 13)
    "encoder_self_attention": ("encoder self-attention weights", "explorer.step6.shape", [MHA]),  # (1, 4, 5, 5)
    "masked_self_attention": ("decoder masked self-attention weights", "explorer.step11.shape", [MHA]),
    "cross_attention": ("cross-attention weights", "explorer.step12.shape", [MHA]),  # (1, 4, 6, 5): not square
}


@claims.EXPLORER_SHAPES
@pytest.mark.parametrize("step", steps(EXPLORER))
def test_explorer_shape(candidate, check, step):
    """The explorer's shapes for "c a b e d" in the toy model (d_model 64, 4 heads, vocabulary 13)."""
    what, fact_id, _ = EXPLORER[step]
    got = observe(candidate, what, TOY, EXPLORER_SRC, EXPLORER_TGT_IN)
    assert_shape(got, published_shape(check, fact_id), what=f"{what} for 'c a b e d' [{fact_id}]")


PRACTICE = {
    "memory": ("memory", "practice.memory", ENCODE),  # (1, 7, 64)
    # A decoder layer keeps its input's shape: the embedded target (1, 8, 64).
    "target": ("decoder layer output", "practice.target_embedded", [pytest.mark.requires("decoder_layer")]),
    "encoder_self_attention": ("encoder self-attention weights", "practice.enc_self_weights", [MHA]),
    "masked_self_attention": ("decoder masked self-attention weights", "practice.dec_self_weights", [MHA]),
    "cross_attention": ("cross-attention weights", "practice.cross_weights", [MHA]),  # (1, 4, 8, 7)
    "logits": ("logits", "practice.logits", FORWARD),  # (1, 8, 13)
}


@claims.PRACTICE_SHAPES
@pytest.mark.parametrize("step", steps(PRACTICE))
def test_guided_practice_shape(candidate, check, step):
    """The guided practice's answers: a 7-letter source and an 8-token decoder input in the toy model."""
    what, fact_id, _ = PRACTICE[step]
    got = observe(candidate, what, TOY, PRACTICE_SRC, PRACTICE_TGT_IN)
    assert_shape(got, published_shape(check, fact_id),
                 what=f"{what} (7-letter source, 8-token decoder input) [{fact_id}]")


@claims.PRACTICE_SHAPES
@MHA
def test_guided_practice_masked_self_attention_hides_28_cells_per_head(candidate, check):
    """With 8 decoder positions the causal mask hides 28 cells per head, all above the diagonal."""
    weights = np.asarray(observe(candidate, "decoder masked self-attention weights", TOY, PRACTICE_SRC,
                                 PRACTICE_TGT_IN))
    # the shape is guided_practice_shape's claim, an input here; the 28 cells are this check's
    shape = published_shape(check, "practice.dec_self_weights", claim=False)
    cells = check.published("practice.hidden_cells")
    assert_shape(weights, shape, what="masked self-attention weights")
    T = shape[-1]
    hidden = (weights == 0).sum(axis=(-2, -1))  # (1, 4): exact zeros per head
    above = np.triu(np.ones((T, T), bool), 1)
    assert_true(bool((hidden == cells).all() and (weights[..., above] == 0).all()),
                f"hidden cells per head: {hidden.ravel().tolist()}, expected {cells} ({T} * {T - 1} / 2) above the"
                f" diagonal ({cells + T} would hide the diagonal too; fewer than {cells} leak the future)",
                expected=f"{cells} per head", actual=str(hidden.ravel().tolist()))


VANILLA_SHAPES = {
    "memory": ("memory", "vanilla.memory.shape", ENCODE),  # "C = Encoder(X) in R^{S x 512}", S = 3
    "logits": ("logits", "vanilla.logits.shape", FORWARD),  # "Z in R^{T x 30,000}", T = 4
    # "the score matrix is T x T": one (4, 4) map per head of the decoder's masked self-attention
    "masked_self_attention": ("decoder masked self-attention weights", "vanilla.scores.quadratic", [MHA]),
    # "the attention weights have shape (T, S) and need not be square", per head
    "cross_attention": ("cross-attention weights", "vanilla.cross.shape", [MHA]),
}


@claims.BASE_SHAPES
@pytest.mark.parametrize("step", steps(VANILLA_SHAPES))
def test_base_model_shape(candidate, check, step):
    """The "Vanilla Transformer" shapes for [I, love, you] in the base model (d_model 512, 8 heads, V 30,000)."""
    what, fact_id, _ = VANILLA_SHAPES[step]
    got = observe(candidate, what, VANILLA, VANILLA_SRC, VANILLA_TGT_IN)
    assert_shape(got, published_shape(check, fact_id), what=f"{what} for [I, love, you] [{fact_id}]")


OWNED = {fact_id for table in (EXPLORER, PRACTICE, VANILLA_SHAPES) for _, fact_id, _ in table.values()} | \
    {"practice.hidden_cells"}


# -- Every other printed shape: each fact has one home, the checks above own theirs
EXPLORER_IDS = {"src": [5, 3, 4, 7, 6], "tgt_in": [1, 6, 7, 4, 3, 5]}  # "c a b e d" and "<s> d e b a c"
PRACTICE_IDS = {"src": [5, 3, 4, 7, 6, 8, 9], "tgt_in": [1, 9, 8, 6, 7, 4, 3, 5]}  # any 7 letters, <s> + 7
VANILLA_IDS = {"src": [21, 135, 48], "tgt_in": [1, 200, 300, 400]}  # [I, love, you]; <BOS> ich liebe dich (ids assumed)


def shape_config(a: dict) -> ModelConfig:
    if a.get("d") == 512:  # the "Vanilla Transformer" example: base size, V = 30,000; one layer shows every shape
        return base_config(src_vocab=30000, tgt_vocab=30000, N=1)
    from conformance.config import toy_config

    return toy_config()


def shape_inputs(a: dict) -> dict:
    return {(5, 6): EXPLORER_IDS, (7, 8): PRACTICE_IDS, (3, 4): VANILLA_IDS}[(a["src_len"], a["tgt_len"])]


_shape_cache: dict = {}


def observed_shapes(candidate, config: ModelConfig, inputs: dict, *, with_attention: bool) -> dict:
    """The shapes the candidate's model produces, in the configurations it declares, on canonical weights of a fixed
    draw: shapes need no particular weights, but a model's own initialisation may be random beyond its seed (one
    draw of Sockeye's gave NaN logits, and the check an error, once in two runs). Cached per candidate: both shape
    checks read the same models (the base-size one is large)."""
    config = candidate.fit(config)
    # the dtype too: the same implementation in float16 is another model (a NaN there is not float32's shape)
    key = (candidate.name, candidate.conventions.dtype, config, tuple(inputs["src"]), tuple(inputs["tgt_in"]),
           with_attention)
    if key not in _shape_cache:
        _shape_cache[key] = _observe(candidate, config, inputs, with_attention)
    return _shape_cache[key]


def canonical_model(candidate, config: ModelConfig):
    """The candidate's model of ``config`` on canonical weights of one fixed draw, whatever its own initialisation."""
    return loaded_model(candidate, config, model_weights(config, np.random.default_rng(0)))


def _observe(candidate, config: ModelConfig, inputs: dict, with_attention: bool) -> dict:
    model = canonical_model(candidate, config)
    weights = model.dump_weights()
    src, tgt_in = np.array([inputs["src"]]), np.array([inputs["tgt_in"]])
    table = weights.get("E", weights.get("E_tgt"))
    shapes = {
        "memory": model.encode(src).shape,
        "logits": model.forward(src, tgt_in).shape,
        "embedding_table": table.shape,
        # tied (§3.4): E^T, (d_model, vocab); an output matrix of its own where the candidate declares one
        "output_projection": weights["W_out"].shape if "W_out" in weights else (table.shape[1], table.shape[0]),
    }
    if with_attention:
        attn = model.attention_weights(src, tgt_in)
        last = config.N - 1
        shapes |= {
            "enc_self_weights": attn["encoder.0.self_attn"].shape,
            "dec_self_weights": attn["decoder.0.self_attn"].shape,
            "cross_weights": attn[f"decoder.{last}.cross_attn"].shape,
            "cross_per_head": attn[f"decoder.{last}.cross_attn"][0, 0].shape,
            "dec_self_per_head": attn["decoder.0.self_attn"][0, 0].shape,
            "hidden_cells": int((attn["decoder.0.self_attn"][0, 0] == 0).sum()),
        }
    return shapes


BATCHED = {"memory", "logits", "enc_self_weights", "dec_self_weights", "cross_weights"}


def expected_shape(entry: dict):
    """Symbolic shapes ("T", "S", "L_q") take their values from the fact's args."""
    value = entry["value"]
    if isinstance(value, int):
        return value
    return tuple(entry["args"].get(v, v) if isinstance(v, str) else v for v in value)


ATTENTION_TENSORS = {"enc_self_weights", "dec_self_weights", "cross_weights", "cross_per_head", "dec_self_per_head",
                     "hidden_cells"}


def assert_published_shapes(candidate, check, *, with_attention: bool):
    """The attention weights' shapes (``with_attention``), or every other observable shape: each one check's."""
    failures, compared = [], 0
    cache = {}
    for entry in published.of_kind("shape"):
        a = entry["args"]
        if (a["tensor"] in ATTENTION_TENSORS) != with_attention:
            continue
        key = (a.get("d"), a["src_len"], a["tgt_len"])
        if key not in cache:
            cache[key] = observed_shapes(candidate, shape_config(a), shape_inputs(a), with_attention=with_attention)
        # inputs, internals the protocol does not expose, or shapes another check of this module owns
        if a["tensor"] not in published.OBSERVED_TENSORS or entry["id"] in OWNED:
            continue
        got = cache[key].get(a["tensor"])
        if got is None:
            continue
        if a.get("unbatched") and a["tensor"] in BATCHED:
            got = got[1:]
        compared += 1
        check.published(entry["id"])
        if got != expected_shape(entry):
            failures.append(f"{a['tensor']}: got {got}, published {entry['printed']!r} [{entry['id']}]")
    assert_true(compared > 0, "no published shape was observable", expected="some shapes", actual="none")
    assert_true(not failures, f"{len(failures)} published shape(s) not reproduced:\n  " + "\n  ".join(failures),
                expected="the published shapes", actual="see message")


@claims.EXPLORER_SHAPES
@pytest.mark.requires("model.forward", "model.encode", "model.load_weights", "model.dump_weights")
def test_published_shapes_of_memory_and_logits(candidate, check):
    """Memory (1, 5, 64) and logits (1, 6, 13) for "c a b e d"; (1, 7, 64), (1, 8, 13) in the guided practice."""
    assert_published_shapes(candidate, check, with_attention=False)


@claims.PRACTICE_SHAPES
@pytest.mark.requires(
    "model.forward", "model.encode", "model.load_weights", "model.dump_weights", "model.attention_weights"
)
def test_published_shapes_of_attention_weights(candidate, check):
    """Attention weights (1, 4, 5, 5), (1, 4, 6, 6), (1, 4, 6, 5); 28 hidden cells above the diagonal for 8 tokens;
    the overview's causal masks for 4 and 5 positions, with weights exactly 0 where hidden."""
    assert_published_shapes(candidate, check, with_attention=True)
    assert_attention_readings(candidate, check)
    model = canonical_model(candidate, candidate.fit(toy_config()))
    failures, causes = [], set()
    for entry in published.of_kind("causal_mask"):
        allowed = np.asarray(check.published(entry["id"]), dtype=bool)
        T = len(allowed)
        tgt_in = np.array([[1, *EXPLORER_IDS["tgt_in"][1:T]]])[:, :T]
        weights = np.asarray(model.attention_weights(np.array([EXPLORER_IDS["src"]]), tgt_in)["decoder.0.self_attn"])
        visible = weights[0] != 0.0  # (h, T, T); softmax of finite scores is never exactly 0
        exact_zero = check.published("vanilla.causal.exact_zero")
        if not ((visible == allowed).all() and (weights[0][:, ~allowed] == exact_zero).all()):
            hidden = (~visible).sum(axis=(-2, -1)).tolist()
            failures.append(f"{T} positions: decoder.0.self_attn hides {hidden} cells per head; published pattern"
                            f" {entry['printed']!r} [{entry['id']}, vanilla.causal.exact_zero]")
            causes.add(causal_pattern_cause(visible, allowed))
    cause = causes.pop() if len(causes) == 1 else None
    assert_true(not failures, f"{len(failures)} published causal pattern(s) not reproduced:\n  "
                + "\n  ".join(failures) + (f"\n  likely cause: {cause}" if cause else ""),
                expected="the published causal patterns", actual="see message",
                **({"likely_cause": cause} if cause else {}))


# "Why the architecture scales": a source of 3 and a decoder input of 4, then of 8 tokens, in the toy model
QUADRATIC_IDS = {T: {"src": [5, 3, 4], "tgt_in": [1, 6, 7, 4, 3, 5, 8, 9][:T]} for T in (4, 8)}


def assert_attention_readings(candidate, check) -> None:
    """What the lessons say of the attention maps of the toy model: the start token reads only itself (weight 1, in
    every head of the explorer's masked self-attention), one map of the guided practice is not square, and the
    masked self-attention's cells per head grow 4 times when the decoder input doubles."""
    toy = toy_config()
    practice = observed_shapes(candidate, toy, PRACTICE_IDS, with_attention=True)
    model = canonical_model(candidate, candidate.fit(toy))
    start_row = np.asarray(model.attention_weights(np.array([EXPLORER_IDS["src"]]), np.array([EXPLORER_IDS["tgt_in"]]))
                           ["decoder.0.self_attn"], np.float64)[0, :, 0]  # (h, T): <s>'s row in every head
    cells = {T: int(np.prod(observed_shapes(candidate, toy, QUADRATIC_IDS[T], with_attention=True)
                            ["dec_self_per_head"])) for T in (4, 8)}
    not_square = sum(shape[-1] != shape[-2] for shape in (practice[k] for k in ("enc_self_weights", "dec_self_weights",
                                                                                "cross_weights")))
    itself = float(start_row[:, 0].min()) if np.abs(start_row[:, 1:]).max() == 0 else 0.0  # weight 1, all else 0
    one = for_candidate(ELEMENTWISE, candidate)  # a softmax of one visible key, in the candidate's dtype
    check.published_values([
        ("explorer.step11.bos_reads_itself", itself, one), ("decoder.first_position_reads_itself", itself, one),
        ("practice.not_square", not_square),
        ("vanilla.scores.grow_quadratically", cells[8] / cells[4]),
    ], what="§3.2.3 attention maps of the toy model")


# -- The layers' own shapes at the lessons' sizes: a layer keeps its input's shape
LAYER_SHAPES = {
    # encoder_layer.py: "(1, 5, 64)" for x = torch.randn(1, 5, 64) in a layer of d 64, h 4, d_ff 256
    "encoder_layer.listing.shape": ("encoder layer output", TOY, EXPLORER_SRC, EXPLORER_TGT_IN),
    # the diagram's target after embedding and positions, (1, 6, 64): what each decoder layer takes and gives back
    "diagram.tgt_embedded.shape": ("decoder layer output", TOY, EXPLORER_SRC, EXPLORER_TGT_IN),
    # "Y in R^{T x 512}", the target-side input of the first decoder layer, and "D in R^{T x 512}" after the layers
    "vanilla.decoder_input.shape": ("decoder layer output", VANILLA, VANILLA_SRC, VANILLA_TGT_IN),
    "vanilla.decoder.output_shape": ("decoder layer output", VANILLA, VANILLA_SRC, VANILLA_TGT_IN),
}


@claims.EXPLORER_SHAPES
@pytest.mark.requires("encoder_layer", "decoder_layer")
def test_published_shapes_of_the_layers(candidate, check):
    """The encoder layer's (1, 5, 64) of encoder_layer.py; the decoder layers' input and output, (1, 6, 64) in the
    diagram and (T, 512) in the "Vanilla Transformer" walk-through."""
    failures = []
    for fact_id, (what, config, src, tgt_in) in LAYER_SHAPES.items():
        got = np.shape(observe(candidate, what, config, src, tgt_in))
        expected = published_shape(check, fact_id)
        if got != expected:
            failures.append(f"{what}: got {got}, published {published.fact(fact_id)['printed']!r} [{fact_id}]")
    assert_true(not failures, f"§3.1: {len(failures)} published shape(s) of the layers not reproduced:\n  "
                + "\n  ".join(failures), expected="the published shapes", actual="see message")
