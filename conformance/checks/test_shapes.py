"""The shapes the lessons print: the explorer's "c a b e d", the guided practice, the base model.

"Shapes are (batch, tokens, numbers) or (batch, heads, queries, keys)" ("The original transformer,
step by step", explorer). Each check reads the part's raw output (before the suite's own validation)
so that a wrong shape is a *failure* of the claim, not an adapter error. Multi-head attention weights
come from ``multi_head_attention`` on the layer's inputs with the mask that layer uses; the FFN's hidden
tensor (1, 5, 256) and the per-head Q, K, V (1, 4, 5, 16) are not observable through the protocol.

Every expected shape is a fact of fixtures/published.toml, read by id (the quoted sentence is there).
"""

import functools

import numpy as np
import pytest

from conformance import claims, oracle, published
from conformance.compare import assert_shape, assert_true
from conformance.config import base_config, toy_config
from conformance.scenarios import MODEL_PARTS, activations, layer_weight_shapes
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
    return candidate.from_layout(candidate.call("model.encode", built(candidate, config), ids(candidate, src)))


def raw_logits(candidate, config, src, tgt_in):
    model = built(candidate, config)
    return candidate.from_layout(candidate.call("model.forward", model, ids(candidate, src), ids(candidate, tgt_in)))


def raw_attention_weights(candidate, config, Lq: int, Lk: int, keep: np.ndarray | None):
    """The (B, h, Lq, Lk) weights multi_head_attention returns for random inputs of these lengths."""
    rng = np.random.default_rng(Lq * 100 + Lk)
    weights = random_weights(attention_shapes(config.d_model), rng)
    query, key = activations(rng, 1, Lq, config.d_model), activations(rng, 1, Lk, config.d_model)
    c = candidate
    result = c.call("multi_head_attention", c.adapter, c.to_layout(c.cast(query)), c.to_layout(c.cast(key)),
                    c.to_layout(c.cast(key)), c.cast_weights(weights), config.h, c.to_mask(keep))
    return c.expect_pair(result, f"multi_head_attention(h={config.h})")[1]


def raw_decoder_layer(candidate, config, T: int, S: int):
    rng = np.random.default_rng(T * 100 + S)
    weights = random_weights(layer_weight_shapes("decoder", config.d_model, config.d_ff), rng)
    y, memory = activations(rng, 1, T, config.d_model), activations(rng, 1, S, config.d_model)
    c = candidate
    out = c.call("decoder_layer", c.adapter, c.to_layout(c.cast(y)), c.to_layout(c.cast(memory)),
                 c.cast_weights(weights), config.h, config.eps, c.to_mask(np.ones((1, T), bool)),
                 c.to_mask(np.ones((1, S), bool)))
    return c.from_layout(out)


def causal(T: int) -> np.ndarray:
    return oracle.causal_keep(T)


# --------------------------------------------------------------------------------------------------
# The checks: one per printed shape
# --------------------------------------------------------------------------------------------------

MODEL = pytest.mark.requires(*MODEL_PARTS[:1])  # build_model only: the shapes need no loaded weights
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
    raise ValueError(what)


ENCODE = [MODEL, pytest.mark.requires("model.encode")]
FORWARD = [MODEL, pytest.mark.requires("model.forward")]


def steps(table: dict[str, tuple[str, str, list]]):
    """{id: (what, fact id, marks)} -> parameters whose check id reads ``..._shape[step=<id>]``."""
    return [pytest.param(step, marks=marks, id=step) for step, (_, _, marks) in table.items()]


def published_shape(fact_id: str) -> tuple[int, ...]:
    """The fact's shape, batch-first: symbols ("S", "T") from its args; an unbatched (T, S) per-head
    shape of the overview document becomes (1, h, T, S), an unbatched (S, 512) becomes (1, S, 512)."""
    entry, value = published.fact(fact_id), published.value(fact_id)
    args = entry["args"]
    shape = tuple(args.get(v, v) if isinstance(v, str) else v for v in value)
    if args["tensor"].endswith("_per_head"):
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
def test_explorer_shape(candidate, step):
    """The explorer's shapes for "c a b e d" in the toy model (d_model 64, 4 heads, vocabulary 13)."""
    what, fact_id, _ = EXPLORER[step]
    got = observe(candidate, what, TOY, EXPLORER_SRC, EXPLORER_TGT_IN)
    assert_shape(got, published_shape(fact_id), what=f"{what} for 'c a b e d' [{fact_id}]")


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
def test_guided_practice_shape(candidate, step):
    """The guided practice's answers: a 7-letter source and an 8-token decoder input in the toy model."""
    what, fact_id, _ = PRACTICE[step]
    got = observe(candidate, what, TOY, PRACTICE_SRC, PRACTICE_TGT_IN)
    assert_shape(got, published_shape(fact_id), what=f"{what} (7-letter source, 8-token decoder input) [{fact_id}]")


@claims.PRACTICE_SHAPES
@MHA
def test_guided_practice_masked_self_attention_hides_28_cells_per_head(candidate):
    """With 8 decoder positions the causal mask hides 28 cells per head, all above the diagonal."""
    weights = np.asarray(observe(candidate, "decoder masked self-attention weights", TOY, PRACTICE_SRC,
                                 PRACTICE_TGT_IN))
    shape, cells = published_shape("practice.dec_self_weights"), published.value("practice.hidden_cells")
    assert_shape(weights, shape, what="masked self-attention weights")
    T = shape[-1]
    hidden = (weights == 0).sum(axis=(-2, -1))  # (1, 4): exact zeros per head
    above = np.triu(np.ones((T, T), bool), 1)
    assert_true(bool((hidden == cells).all() and (weights[..., above] == 0).all()),
                f"hidden cells per head: {hidden.ravel().tolist()}, expected {cells} ({T} * {T - 1} / 2) above the"
                " diagonal", likely=f"the causal mask blocks the diagonal too ({cells + T} hidden) or leaks (fewer"
                f" than {cells})", expected=f"{cells} per head", actual=str(hidden.ravel().tolist()))


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
def test_base_model_shape(candidate, step):
    """The "Vanilla Transformer" shapes for [I, love, you] in the base model (d_model 512, 8 heads, V 30,000)."""
    what, fact_id, _ = VANILLA_SHAPES[step]
    got = observe(candidate, what, VANILLA, VANILLA_SRC, VANILLA_TGT_IN)
    assert_shape(got, published_shape(fact_id), what=f"{what} for [I, love, you] [{fact_id}]")
