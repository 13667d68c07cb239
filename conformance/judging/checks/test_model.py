"""§3.4 Embeddings and softmax: the whole model's logits, the tied output layer, greedy decoding.

One matrix E serves the source embedding, the target embedding and the pre-softmax projection:
logits = y E^T, with the embeddings multiplied by sqrt(d_model) ("The original transformer, step by
step", Steps 1 and 5: "a linear layer multiplies by the transposed embedding table, with no new
weights"). Greedy decoding (the lesson's "Greedy decoding"): the encoder runs once, the decoder starts
from <s> and appends the most likely token at each step, and a row stops at </s>.

Compared with the reference run in float64 on random canonical weights. A failing comparison names
the first layer that diverges (encoder first, then decoder, then the output projection).
"""

import dataclasses
import functools

import numpy as np
import pytest
from hypothesis import given

from conformance.config import ModelConfig, base_config, toy_config
from conformance.diagnosis import PROBE_SEED, Question, find_structure
from conformance.diagnosis.localise import locate_forward
from conformance.paper import claims
from conformance.problems import oracle, questions
from conformance.problems.scenarios import (
    LOADED_MODEL,
    ModelSizes,
    fast_failure,
    loaded_model,
    model_sizes,
    model_weights,
    source_and_target,
    token_ids,
    trailing_keep,
)
from conformance.tolerances import MODEL, Tolerance, for_candidate, half, visible

SECTION = "§3.4 Embeddings and softmax"

# The explorer's numbers for "c a b e d" (memory, the score 5.223 of "d" at position 1) come from the
# lesson's own trained model, which is not published: fixtures/verify.py checks the relations among them,
# and test_checkpoint.py runs the same claims on the suite's trained toy checkpoint.



def assert_logits_match_oracle(candidate, check, sizes: ModelSizes):
    cfg = sizes.config
    weights, src, tgt_in = questions.model_problem(sizes)
    model = loaded_model(candidate, cfg, weights)
    check.close(
        model.forward(src, tgt_in), oracle.OracleModel(cfg, weights).forward(src, tgt_in),
        for_candidate(MODEL, candidate),
        what=f"logits = forward(src{src.shape}, tgt_in{tgt_in.shape}) (N={cfg.N}, d_model={cfg.d_model},"
             f" h={cfg.h}, vocab={cfg.tgt_vocab})",
        ask=Question(questions.logits, sizes),
        locate=lambda: locate_forward(candidate, model, cfg, weights, src, tgt_in),
        structure=lambda: find_structure(candidate, "encoder", "decoder"),
    )


@claims.OUTPUT_LAYER
@pytest.mark.requires(*LOADED_MODEL, "model.forward")
@fast_failure(2 / 3)
@given(sizes=model_sizes())
def test_logits_match_reference(candidate, check, sizes):
    """forward(src, tgt_in) equals the reference's logits on a padded batch (any N, d_model, h, vocabulary)."""
    assert_logits_match_oracle(candidate, check, sizes)


@claims.OUTPUT_LAYER
@pytest.mark.requires(*LOADED_MODEL, "model.forward")
def test_logits_match_reference_at_base_size(candidate, check, rng):
    """At the base model's sizes (d_model 512, h 8, d_ff 2048) the logits equal the reference's.

    One encoder and one decoder layer and a 1,000-token vocabulary keep it under a second or two; six
    layers each would only repeat them."""
    config = base_config(N=1).replace(src_vocab=1000, tgt_vocab=1000)
    sizes = ModelSizes(config, B=2, S=9, T=7, seed=int(rng.integers(2**31)))
    assert_logits_match_oracle(candidate, check, candidate.fit(sizes))


def unused_row_problem(sizes: ModelSizes):
    """A vocabulary one larger than the inputs use: its last token v is absent, so its row of E reaches the
    logits only through the output layer; weights, src, tgt_in, v and a new row for it."""
    vocab, rng = sizes.config.tgt_vocab + 1, sizes.rng()
    config = sizes.config.replace(src_vocab=vocab, tgt_vocab=vocab)
    weights = model_weights(config, rng)
    src, tgt_in = source_and_target(ModelSizes(sizes.config, sizes.B, sizes.S, sizes.T, sizes.seed), rng)
    v = config.tgt_vocab - 1  # token_ids() never draws the last id when given the smaller vocabulary
    return config, weights, src, tgt_in, v, rng.normal(0.0, 10.0, config.d_model).astype(np.float32)


def unused_row_logits(candidate, sizes: ModelSizes):
    config, weights, src, tgt_in, _, _ = unused_row_problem(sizes)
    return loaded_model(candidate, config, weights).forward(src, tgt_in)


@claims.TIED_WEIGHTS
@pytest.mark.requires(*LOADED_MODEL, "model.forward")
@fast_failure(1 / 2)
@given(sizes=model_sizes())
def test_changing_an_unused_embedding_row_changes_only_its_logit(candidate, check, sizes):
    """The output layer is tied to the target's embedding table: changing row v of it changes only the logit of v.

    v is a token absent from the input, so its row reaches the logits only through the output layer. The table is E,
    or E_tgt where the candidate declares a source table and a target table; a candidate that declares an output
    matrix of its own (tie_output False only) is not asked: the tying is its declared deviation."""
    candidate.require("model.forward", tie_output=True)
    config, weights, src, tgt_in, v, row = unused_row_problem(sizes)
    table = "E" if config.share_embeddings else "E_tgt"
    model = loaded_model(candidate, config, weights)
    before = model.forward(src, tgt_in)
    changed = {**weights, table: weights[table].copy()}
    changed[table][v] = row  # logit v moves by y . delta
    model.load_weights(changed)
    after = model.forward(src, tgt_in)
    others = np.arange(config.tgt_vocab) != v
    ask = Question(unused_row_logits, sizes)
    check.close(after[..., others], before[..., others], for_candidate(MODEL, candidate),
                what=f"logits of the other tokens after changing row {v} of {table} (no output bias, no"
                     " normalisation over the vocabulary before the logits)", ask=ask)
    # y . delta is 0 only by accident at a position; tied output moves the logit at (nearly) all of them
    allowed = visible(MODEL, candidate).allowed(np.abs(before[..., v]))
    moved = np.abs(after[..., v].astype(np.float64) - before[..., v]) / allowed
    check.claim(bool((moved > 10).mean() >= 0.5),
                f"the logit of token {v} did not change at {int((moved <= 10).sum())} of {moved.size} positions"
                f" when row {v} of {table} did: the output projection does not read the embedding table {table}",
                ask=ask, expected=f"logit {v} changes", actual=f"largest change {float(moved.max()):.3g} x tolerance")


# --------------------------------------------------------------------------------------------------
# Greedy decoding
# --------------------------------------------------------------------------------------------------

GREEDY = ModelConfig(src_vocab=8, tgt_vocab=8, d_model=16, h=2, d_ff=64, N=2)  # the paper's shape, d_ff = 4 d_model
MAX_LEN = 8


def greedy_sizes(seed: int) -> ModelSizes:
    """12 padded sources of 5 tokens, decoded for at most T = MAX_LEN tokens; fitted into what a candidate declares
    (``Candidate.fit``), the weights drawn for the fitted configuration."""
    return ModelSizes(GREEDY, B=12, S=5, T=MAX_LEN, seed=seed)


@dataclasses.dataclass(frozen=True)
class EveryRowEnds:
    """The greedy question's second problem: one where every row of the reference's output ends with </s> before
    max_len, at different steps. On a problem where some row runs to max_len, a decoder that never pads after
    </s> and one that never stops at </s> answer alike; here they do not."""

    sizes: ModelSizes


@functools.cache
def greedy_problem(sizes: ModelSizes, every_row_ends: bool = False):
    """Weights and a padded source (B, S) on which the reference's greedy output exercises both endings.

    Random weights often make every row pick one token forever; this searches (deterministically from the
    seed) for a problem where some row stops with </s> at step 2 or later (earlier when T is shorter) and
    another row ends elsewhere or runs to max_len (T); with ``every_row_ends``, one where every row stops before
    max_len. The output rows of padding and <s> are 0, so they are seldom predicted."""
    config, rng = sizes.config, sizes.rng()
    for _ in range(300):
        weights = model_weights(config, rng)
        output_rows(weights, config)[[config.pad_id, config.bos_id]] = 0.0
        src = token_ids(rng, config, sizes.B, sizes.S, keep=trailing_keep(rng, sizes.B, sizes.S, full_row=True))
        ends = [end_of_row(row) for row in oracle.OracleModel(config, weights).greedy_decode(src, sizes.T)]
        late = any(min(3, sizes.T - 1) <= end < sizes.T for end in ends)
        if max(ends) > min(ends) and late and (max(ends) < sizes.T or not every_row_ends):
            break
    return weights, src


def output_rows(weights: dict, config: ModelConfig) -> np.ndarray:
    """The output projection as (vocabulary, d_model): a view of the table the logits read."""
    if not config.tie_output:
        return weights["W_out"].T
    return weights["E" if config.share_embeddings else "E_tgt"]


def end_of_row(row: np.ndarray) -> int:
    """Index just after the first </s> of a generated row, or its length."""
    hits = np.flatnonzero(row == GREEDY.eos_id)
    return int(hits[0]) + 1 if hits.size else len(row)


def greedy_ids(candidate, problem: ModelSizes | EveryRowEnds) -> np.ndarray:
    """The candidate's greedy decoding of the problem ``greedy_problem(sizes)``: the question both checks ask."""
    ends = isinstance(problem, EveryRowEnds)
    sizes = problem.sizes if ends else problem
    weights, src = greedy_problem(sizes, every_row_ends=ends)
    return loaded_model(candidate, sizes.config, weights).greedy_decode(src, sizes.T)


def greedy_question(sizes: ModelSizes) -> Question:
    probe = EveryRowEnds(dataclasses.replace(sizes, seed=sizes.seed + PROBE_SEED))
    return Question(greedy_ids, sizes, probe=probe, tol=Tolerance(0, 0, "token ids are exact"))


def fitted_greedy_sizes(candidate, request) -> ModelSizes:
    return candidate.fit(greedy_sizes(request.config.getoption("conformance_seed")))


@claims.GREEDY_DECODING
@pytest.mark.requires(*LOADED_MODEL, "model.greedy_decode", "model.forward")
@pytest.mark.judges("model.greedy_decode")
def test_greedy_decoding_picks_the_argmax_at_every_step(candidate, check, request):
    """Every generated token is the most likely next token given <s> and the tokens before it.

    "Most likely" by the candidate's own forward(), so that this isolates the decoding loop; whether the
    logits themselves are right is logits_match_reference's claim. The forward is given what the loop read: the
    batch's tokens up to the judged row's </s>, not the padding the loop returned after it."""
    sizes = fitted_greedy_sizes(candidate, request)
    weights, src = greedy_problem(sizes)
    model = loaded_model(candidate, sizes.config, weights)
    got = model.greedy_decode(src, sizes.T)
    tgt_in = np.concatenate([np.full((len(src), 1), GREEDY.bos_id), got[:, :-1]], axis=1)
    ends = [end_of_row(row) for row in got]
    for end in sorted(set(ends) - {0}):
        logits = model.forward(src, tgt_in[:, :end]).astype(np.float64)  # causal: one pass scores every step
        allowed = for_candidate(MODEL, candidate).allowed(np.abs(logits).max(-1))
        for b in (b for b, row_end in enumerate(ends) if row_end == end):
            for t in range(end):
                best, chosen = int(logits[b, t].argmax()), int(got[b, t])
                gap = float(logits[b, t, best] - logits[b, t, chosen])
                check.claim(gap <= allowed[b, t],
                            f"row {b}, step {t}: generated token {chosen}, but the most likely next token is {best}"
                            f" (logit {logits[b, t, best]:.4g} vs {logits[b, t, chosen]:.4g}) by the model's own"
                            " forward pass, which scores every step at once (causal)", ask=greedy_question(sizes),
                            expected=f"token {best} at step {t}", actual=f"token {chosen}")


@claims.GREEDY_DECODING
@pytest.mark.requires(*LOADED_MODEL, "model.greedy_decode")
@pytest.mark.judges("model.greedy_decode")
def test_greedy_decoding_stops_at_the_end_token_then_pads(candidate, check, request):
    """A row ends at its first </s> and holds only padding after it; a row without </s> runs to max_len."""
    sizes = fitted_greedy_sizes(candidate, request)
    weights, src = greedy_problem(sizes)
    got = loaded_model(candidate, sizes.config, weights).greedy_decode(src, sizes.T)
    for b, row in enumerate(got):
        end = end_of_row(row)
        tail = row[end:]
        check.claim(bool((tail == GREEDY.pad_id).all()),
                    f"row {b} continues after </s> at step {end - 1}: {tail.tolist()} (after </s> a row holds"
                    f" pad_id {GREEDY.pad_id} only)", ask=greedy_question(sizes),
                    expected="padding after </s>", actual=str(row.tolist()))
        stopped = (row == GREEDY.eos_id).any()
        check.claim(bool(stopped) or len(row) == sizes.T,
                    f"row {b} stopped after {len(row)} tokens without </s> (max_len {sizes.T}): decoding goes on"
                    " until every row has produced </s>", ask=greedy_question(sizes),
                    expected=f"{sizes.T} tokens", actual=str(row.tolist()))


# -- The embedded inputs the lessons print: their shapes and the factor sqrt(d_model), read off the model itself
def quiet_weights(config: ModelConfig, source: dict[int, np.ndarray],
                  target: dict[int, np.ndarray]) -> dict[str, np.ndarray]:
    """Weights whose every sublayer adds 0 (W_O, b_O, W2, b2 zero; gamma 1, beta 0), so that each layer only normalises
    what enters it, with the source table's rows ``source`` and the target table's rows ``target`` set (one table E
    where the candidate shares them; an output matrix of its own reads the target's rows as its columns): the memory
    is then LayerNorm(sqrt(d_model) E[src] + PE) and the logits LayerNorm(sqrt(d_model) E[tgt_in] + PE) E^T."""
    weights = model_weights(config, np.random.default_rng(config.d_model))
    for name, value in weights.items():
        leaf = name.rsplit(".", 1)[-1]
        if leaf in ("W_O", "b_O", "W2", "b2", "beta", "gamma"):
            weights[name] = np.full_like(value, 1.0 if leaf == "gamma" else 0.0)
    source_table, target_table = ("E", "E") if config.share_embeddings else ("E_src", "E_tgt")
    for table, rows in ((source_table, source), (target_table, target)):
        for token, row in rows.items():
            weights[table][token] = row
    if not config.tie_output:
        for token, row in target.items():
            weights["W_out"][:, token] = row
    return weights


def embedded_inputs(candidate, config: ModelConfig, src, tgt_in) -> dict:
    """The source and target embeddings as the candidate's model makes them, at position 0, where PE is sin 0 = 0 and
    cos 0 = 1 in every pair: with E[src_0] = E[<s>] = u (mean 0, orthogonal to PE(0) in either column order), a
    layer that only normalises keeps s u + PE(0) in proportion. The source's s is read off the memory's first row
    (``scale_read_back``); the target's, which only logits show, as the ratio of two of them, <s>'s and that of
    E[</s>] = PE(0)'s pattern: the diagram's "the same embedding table, times 8, and the same positional encoding".
    Also the memory's shape: the embedded source's."""
    d = config.d_model
    u = 0.1 * np.tile([1.0, 1.0, -1.0, -1.0], d // 4 + 1)[:d]
    p = np.tile([-0.5, 0.5], d // 2)  # the paper's PE(0) less its mean
    model = loaded_model(candidate, config, quiet_weights(config, {src[0][0]: u}, {config.bos_id: u, config.eos_id: p}))
    memory = np.asarray(model.encode(np.array(src)), np.float64)
    logits = np.asarray(model.forward(np.array(src), np.array(tgt_in)), np.float64)[0, 0]
    first = memory[0, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        target = float((logits[config.bos_id] / (u @ u)) / (logits[config.eos_id] / (p @ p)))
    return {"shape": memory.shape, "source_scale": scale_read_back(first, u), "target_scale": target}


def scale_read_back(row: np.ndarray, u: np.ndarray) -> float:
    """s from a row that is s u + PE(0) up to a scale and a shift (a LayerNorm's, or none): less its mean it is
    c (s u + p), p = PE(0) less its mean, whose d/2 zeros and d/2 ones make |p|^2 = d / 4 whatever their order; its
    part along u is c s u, the rest c p, of norm c sqrt(d) / 2."""
    row = row - row.mean()
    along = row @ u / (u @ u)
    rest = np.linalg.norm(row - along * u)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(along * np.sqrt(len(row)) / 2 / rest)


# The explorer ("c a b e d", decoder input "<s> d e b a c"), the guided practice's 7 letters (toy model) and
# "[I, love, you]" in the base model (one layer of each stack and V = 30,000, as "Vanilla Transformer" sizes it).
EMBEDDED = {
    "explorer": (toy_config(), [[5, 3, 4, 7, 6]], [[1, 6, 7, 4, 3, 5]]),
    "practice": (toy_config(), [[3, 4, 5, 6, 7, 8, 9]], [[1, 9, 8, 7, 6, 5, 4, 3]]),
    "base": (base_config(N=1, src_vocab=30000, tgt_vocab=30000), [[21, 135, 48]], [[1, 4021, 5135, 6048]]),
}
# A scale read back as a ratio of projections of float32 outputs through N LayerNorms: ~1e-6 relative; 1e-4 leaves
# a factor 100, far below an unscaled embedding (a factor 8) or d_model^0.25 (a factor 2.8). Half precision: 16u.
SCALE_READ_BACK = {"float32": Tolerance(1e-4, 0.0, "scale read back from float32 outputs through LayerNorm"),
                   "float64": Tolerance(1e-4, 0.0, "scale read back from float outputs through LayerNorm"),
                   **half(16, "outputs read back through LayerNorm")}


@claims.EMBEDDING
@pytest.mark.requires(*LOADED_MODEL, "model.encode", "model.forward")
def test_published_embedded_inputs(candidate, check):
    """The source after embedding, x 8 and + PE: (1, 5, 64) for c a b e d, (1, 7, 64) in the practice, (S, 512) =
    (3, 512) for [I, love, you]; the factor sqrt(d_model): 8 in the encoder and the decoder of the toy, sqrt(512) =
    22.6 in the base model."""
    seen = {name: embedded_inputs(candidate, candidate.fit(config), src, tgt_in)
            for name, (config, src, tgt_in) in EMBEDDED.items()}
    check.record("embedded_inputs", seen)
    scale = for_candidate(SCALE_READ_BACK, candidate)
    explorer, base = seen["explorer"], seen["base"]
    check.published_values([
        *((fact_id, explorer["shape"]) for fact_id in ("explorer.step2.shape", "explorer.step3.shape",
                                                       "explorer.step4.shape", "diagram.src_embedded.shape")),
        ("practice.source_embedded", seen["practice"]["shape"]),
        ("vanilla.x_emb.shape", base["shape"][1:]), ("vanilla.pe.shape", base["shape"][1:]),  # unbatched there
        *((fact_id, explorer["source_scale"], scale) for fact_id in ("explorer.step3.factor",
                                                                     "diagram.embedding.scale")),
        ("diagram.decoder.scale", explorer["target_scale"], scale),
        ("vanilla.x_emb.scale", base["source_scale"], scale),
    ], what="§3.4 embedded inputs")
