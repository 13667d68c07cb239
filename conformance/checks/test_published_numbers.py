"""Every reproducible published number, asked of the candidate: one check per kind of number.

``fixtures/published.toml`` records, for each fact, how the lessons computed it (``verify`` and its
``args``). This module turns each kind into a question for the candidate: PE values and wavelengths
(§3.5), LayerNorm of the example (§3.1), learning rates (§5.3), label smoothing (§5.4), parameter
counts (Table 3) and shapes (§3). Numbers printed several times (0.537 appears six times) are all
checked, each under its own id, so the report's "published numbers reproduced" line counts them.
The randomised twins of these claims live in the section modules.
"""

import numpy as np
import pytest

from conformance import claims, published
from conformance.compare import assert_true
from conformance.config import ModelConfig, base_config, toy_config
from conformance.errors import PartNotImplemented
from conformance.scenarios import no_padding
from conformance.tolerances import Tolerance

SECTION = "Published numbers of the lessons"


def fmt_failures(failures: list[str]) -> str:
    return f"{len(failures)} published value(s) not reproduced:\n  " + "\n  ".join(failures)


def looser(fact_id: str, floor: Tolerance | None) -> Tolerance:
    """The fact's printed tolerance, or ``floor`` where a value is read back through arithmetic that
    float32 rounding makes inexact (an exact "1" read off a sine) and the floor is the looser."""
    printed_tol = published.tolerance(fact_id)
    if floor is None or (printed_tol.rtol >= floor.rtol and printed_tol.atol >= floor.atol):
        return printed_tol
    return Tolerance(max(printed_tol.rtol, floor.rtol), max(printed_tol.atol, floor.atol),
                     f"{printed_tol.reason}; {floor.reason}")


def fmt_values(got) -> str:
    """Six significant digits, whatever the magnitude: a rate of 3.49e-07 must not print as 0.0."""
    values = np.asarray(got, dtype=np.float64)
    text = [f"{v:.6g}" for v in values.ravel()]
    return text[0] if values.ndim == 0 else "[" + ", ".join(text) + "]"


def compare_each(check, pairs, *, what: str, floor: Tolerance | None = None):
    """pairs: (fact_id, got) or (fact_id, got, floor). Compare all, then fail once, naming every fact
    that differs."""
    failures = []
    for fact_id, got, *own_floor in pairs:
        try:
            check.close(
                np.asarray(got, dtype=np.float64),
                np.asarray(published.value(fact_id), dtype=np.float64),
                looser(fact_id, own_floor[0] if own_floor else floor),
                what=f"{what} [{fact_id}, {published.cite(fact_id)}]",
            )
        except AssertionError as exc:
            failures.append(
                str(exc).splitlines()[0] + f" (got {fmt_values(got)}, published {published.fact(fact_id)['printed']!r})"
            )
    assert_true(not failures, fmt_failures(failures), expected="the published values", actual="see message")


# -- §3.5 positional encoding -----------------------------------------------------------------------
@claims.POSITIONAL_ENCODING_BY_HAND
@pytest.mark.requires("positional_encoding")
def test_published_positional_encoding_values(candidate, check):
    """Every printed PE value (0.841, 0.540, 0.682, 0.732, 0.909, -0.416, the (0, 1, 0, 1) of position 0)."""
    pairs = []
    for entry in published.of_kind("pe"):
        a = entry["args"]
        cols = a.get("cols", a.get("col"))
        pairs.append((entry["id"], candidate.positional_encoding(a["pos"] + 1, a["d"])[a["pos"], cols]))
    pe = candidate.positional_encoding(50, 64).astype(np.float64)  # positions.py: sinusoidal_positions(50, 64)
    shape, row1, first3 = listing_lines("positions.py")
    pairs += [(shape, pe.shape), (row1, pe[1, :4]), (first3, pe[1, :3])]
    for verify in ("pe_divisor", "pe_angle"):  # 10000^(2i/d) and pos / 10000^(2i/d), read off the candidate's PE
        for entry in published.of_kind(verify):
            a = entry["args"]
            angle = pair_angle(candidate, a["i"], a["d"])
            pairs.append((entry["id"], 1 / angle if verify == "pe_divisor" else a["pos"] * angle))
    compare_each(check, pairs, what="PE", floor=READ_BACK)


# An angle read off float32 PE values through arctan2: a few float32 ulp (1e-7 relative); 1e-5 leaves a
# factor 100 and is far below any wrong exponent (10000^(2/64) vs 10000^(1/64): 33 %).
READ_BACK = Tolerance(1e-5, 1e-7, "read back from float32 PE values through arctan2")


def listing_lines(listing: str) -> list[str]:
    """The ids of a listing's printed lines, in order."""
    entries = [e for e in published.of_kind("listing_line") if e["args"]["listing"] == listing]
    return [e["id"] for e in sorted(entries, key=lambda e: e["args"]["line"])]


def pair_angle(candidate, i: int, d: int) -> float:
    """omega_i = 1 / 10000^(2i/d), the angle pair i turns per position, read off the candidate's PE[1]."""
    pe = candidate.positional_encoding(2, d).astype(np.float64)
    return float(np.arctan2(pe[1, 2 * i], pe[1, 2 * i + 1]))


@claims.POSITIONAL_ENCODING
@pytest.mark.requires("positional_encoding")
def test_published_wavelengths(candidate, check):
    """Every printed wavelength (6.3 ... 47,117.2 for d_model 64; 6.3 ... 60,611.5 for 512; columns 0, 8, 20)."""
    pairs = []
    for entry in published.of_kind("wavelength"):
        a = entry["args"]
        pair = a["i"] if "i" in a else a["col"] // 2
        pairs.append((entry["id"], 2 * np.pi / pair_angle(candidate, pair, a["d"])))
    for fact_id in listing_lines("wavelengths"):  # "for d in (64, 512): ... for i in (0, 1, d // 4, d // 2 - 1)"
        d = published.fact(fact_id)["value"][0]
        pairs.append((fact_id, [d, *(2 * np.pi / pair_angle(candidate, i, d) for i in (0, 1, d // 4, d // 2 - 1))]))
    compare_each(check, pairs, what="wavelength 2*pi/omega read off PE[1]")


@claims.POSITIONAL_ENCODING
@pytest.mark.requires("positional_encoding")
def test_published_rotation_pairs(candidate, check):
    """The rotation check's pairs: PE[pos + 3, 10:12] at positions 0, 10 and 40 (and R @ PE[pos])."""
    pairs = []
    for entry in published.of_kind("rotation"):
        a = entry["args"]
        pairs.append((entry["id"], rotation_pair(candidate, a["pos"], a["which"], a["k"], a["i"], a["d"])))
    k, i, d = (published.fact("rotation.pos0.turned")["args"][key] for key in ("k", "i", "d"))
    for fact_id in listing_lines("rotation check"):  # each line: pos, PE[pos + k] pair, R(k) @ PE[pos] pair
        pos = published.fact(fact_id)["value"][0]
        shifted, turned = (rotation_pair(candidate, pos, which, k, i, d) for which in ("shifted", "turned"))
        pairs.append((fact_id, [pos, *shifted, *turned]))
    compare_each(check, pairs, what="rotated PE pair")


def rotation_pair(candidate, pos: int, which: str, k: int, i: int, d: int) -> np.ndarray:
    """The rotation check's pair i at pos: PE[pos + k] ("shifted") or R(omega_i k) @ PE[pos] ("turned")."""
    pe = candidate.positional_encoding(pos + k + 1, d).astype(np.float64)
    if which == "shifted":
        return pe[pos + k, 2 * i : 2 * i + 2]
    w = k / 10000 ** (2 * i / d)
    return np.array([[np.cos(w), np.sin(w)], [-np.sin(w), np.cos(w)]]) @ pe[pos, 2 * i : 2 * i + 2]


# -- §3.1 layer normalization -----------------------------------------------------------------------
@claims.LAYER_NORM_BY_HAND
@pytest.mark.requires("layer_norm")
def test_published_layer_norm_example(candidate, check):
    """LayerNorm(1, 2, 3, 6) = (-1.069, -0.535, 0, 1.604), and its two hand-checked ends."""
    x = np.asarray(published.value("layernorm.example.x"), dtype=np.float64)
    got = candidate.layer_norm(x, np.ones(4), np.zeros(4), 1e-5)
    # The mean and spread the candidate used, read back from its output: y = (x - mean) / sqrt(var + eps).
    y = np.asarray(got, dtype=np.float64)
    sigma = (x[-1] - x[0]) / (y[-1] - y[0])
    mean = float(np.mean(x - sigma * y))
    implied = {"mean": mean, "std": sigma, "variance": sigma**2 - 1e-5, "squared_deviations": (sigma * y) ** 2}
    statistics = [(fact_id, implied[published.fact(fact_id)["args"]["quantity"]], IMPLIED)
                  for fact_id in ("layernorm.example.mean", "layernorm.example.variance", "layernorm.example.std",
                                  "layernorm.example.squared_deviations")]
    means_line, *output_lines = listing_lines("layer norm")  # "3.0 3.5", then the normalised row twice
    compare_each(
        check,
        [("layernorm.example.normalized", got), ("layernorm.example.x1", got[0]), ("layernorm.example.x4", got[3]),
         *((line, got) for line in output_lines), *statistics, (means_line, [mean, sigma**2 - 1e-5], IMPLIED)],
        what="LayerNorm(1, 2, 3, 6), and the mean and variance it used",
    )


# Statistics read back from a float32 LayerNorm through a difference quotient: y's relative error
# ~1e-7 grows to ~1e-6 in sigma^2; 1e-5 keeps a margin of 10 and is far below the unbiased variance's 33 %.
IMPLIED = Tolerance(1e-5, 1e-6, "read back from float32 outputs through (x4 - x1) / (y4 - y1)")


# -- §5.3 schedule -----------------------------------------------------------------------------------
@claims.LEARNING_RATE
@pytest.mark.requires("learning_rate")
def test_published_learning_rates(candidate, check):
    """Every printed rate: the paper's table and chart, the toy's hand checks and the log's lr column."""
    pairs = []
    logged = published.of_kind("lambdalr_log")  # the log prints the next step's rate
    for shift, entries in ((0, published.of_kind("lrate")), (1, logged)):
        for entry in entries:
            a = entry["args"]
            step = a["step"] + shift
            pairs.append((entry["id"], candidate.learning_rate(step, a.get("d_model", 512), a.get("warmup", 4000))))
    for fact_id in listing_lines("lrate table"):  # each line: step, lrate(step, 512, 4000)
        step = published.fact(fact_id)["value"][0]
        pairs.append((fact_id, [step, candidate.learning_rate(step, 512, 4000)]))
    compare_each(check, pairs, what="lrate")


# -- §5.4 label smoothing ----------------------------------------------------------------------------
SMOOTHING_LISTING = {"best_loss": "best_loss", "sure_loss": "sure_loss"}


def smoothing_quantity(candidate, quantity: str, V: int, eps: float) -> float:
    """What the lesson prints, asked of the candidate's loss: q(right), q(other), the floor, 100 % sure."""
    right = 5  # the listing's right token
    if quantity in ("right", "other"):
        token = right if quantity == "right" else 0
        logits = np.zeros((1, V))
        logits[0, token] = 1.0  # L(e_token) = -q(token) + log(V - 1 + e): q(token) read off the loss
        loss = candidate.label_smoothed_loss(logits, np.array([right]), eps, no_padding(V))
        return float(np.log(V - 1 + np.e) - loss)
    q = np.full((1, V), eps / V)
    q[0, right] += 1 - eps
    logits = np.log(q) if quantity == "best_loss" else np.where(np.arange(V) == right, 20.0, 0.0)[None]
    return candidate.label_smoothed_loss(logits, np.array([right]), eps, no_padding(V))


@claims.LABEL_SMOOTHING
@pytest.mark.requires("label_smoothed_loss")
def test_published_label_smoothing_values(candidate, check):
    """q = 0.908 / 0.9077 on the right token and 0.0077 elsewhere; the floor 0.537; 1.846 when 100 % sure."""
    pairs = []
    for entry in published.of_kind("label_smoothing"):
        a = entry["args"]
        pairs.append(
            (entry["id"], a.get("scale", 1) * smoothing_quantity(candidate, a["quantity"], a["n_vocab"], a["eps"]))
        )
    for entry in published.of_kind("listing_value"):
        if entry["args"].get("listing") == "label smoothing":
            pairs.append((entry["id"], smoothing_quantity(candidate, entry["args"]["key"], 13, 0.1)))
    targets, losses = listing_lines("label smoothing")  # "0.9077 0.0077"; "best possible loss 0.537; 100% sure: 1.846"
    pairs += [
        (targets, [smoothing_quantity(candidate, q, 13, 0.1) for q in ("right", "other")]),
        (losses, [smoothing_quantity(candidate, "best_loss", 13, 0.1), 100,
                  smoothing_quantity(candidate, "sure_loss", 13, 0.1)]),
    ]
    compare_each(check, pairs, what="label smoothing")


# -- Table 3 parameter counts -------------------------------------------------------------------------
def count_part(candidate, part: str, a: dict) -> int | None:
    """A published count the candidate can be asked for through whole-model configurations."""
    d, d_ff, N, V = a["d"], a["d_ff"], a["N"], a["vocab"]
    config = ModelConfig(src_vocab=V, tgt_vocab=V, d_model=d, h=8, d_ff=d_ff, N=N)
    counts = {
        "total": lambda: candidate.parameter_count(config),
        "total_separate_output": lambda: candidate.parameter_count(config.replace(tie_output=False)),
        "total_two_vocabularies": lambda: candidate.parameter_count(
            config.replace(share_embeddings=False, tgt_vocab=V)
        ),
        "embedding": lambda: candidate.parameter_count(config.replace(N=0)),
        "layers": lambda: candidate.parameter_count(config) - candidate.parameter_count(config.replace(N=0)),
        "attention_biases": lambda: (
            candidate.parameter_count(config) - candidate.parameter_count(config.replace(attention_bias=False))
        ),
    }
    return counts[part]() if part in counts else None


@claims.PARAMETER_COUNT
@pytest.mark.requires("parameter_count")
def test_published_parameter_counts(candidate, check):
    """63,082,496 (and "about 63 million"), 82,026,496, 76,906,496, 44,138,496 in the layers, 18.9 M in E, 36,864."""
    count = candidate.parameter_count
    asked = [(entry["id"], lambda a=entry["args"]: count_part(candidate, a["part"], a))
             for entry in published.of_kind("param_count")]
    base = base_config()
    asked += [
        # PyTorch's own count of the lesson's toy model (nn.Transformer layers without final norms, plus E)
        ("toy.parameters.torch", lambda: count(toy_config())),
        ("german.layers.torch", lambda: count(base) - count(base.replace(N=0))),
        ("params.attention_biases.torch", lambda: count(base) - count(base.replace(attention_bias=False))),
    ]
    totals, = listing_lines("parameter count")[1:]  # "63,082,496 82,026,496"
    asked.append((totals, lambda: [count(base), count(base.replace(tie_output=False))]))
    pairs = [(fact_id, got) for fact_id, got in answerable(check, asked) if got is not None]
    # (per-sublayer counts, attention, FFN, one layer, are not observable from outside: count_part gives None)
    # One encoder plus one decoder layer (the listing's third and fourth counts) is what N = 1 adds to N = 0.
    per_layer, encoder_layer, decoder_layer = listing_lines("parameter count")[0], "params.encoder_layer.torch", \
        "params.decoder_layer.torch"
    one_pair = count(base.replace(N=1)) - count(base.replace(N=0))
    layers = published.value(per_layer)
    expected_pair = published.value(encoder_layer) + published.value(decoder_layer)
    assert_true(one_pair == layers[2] + layers[3] == expected_pair,
                f"one encoder layer plus one decoder layer: {one_pair:,} parameters; the lesson prints"
                f" {layers[2]:,} + {layers[3]:,} [{per_layer}, {encoder_layer}, {decoder_layer}]",
                likely="a missing or extra bias or LayerNorm in a layer (count them per sublayer)",
                expected=f"{layers[2] + layers[3]:,}", actual=f"{one_pair:,}")
    compare_each(check, pairs, what="parameter_count")


def answerable(check, asked):
    """[(fact_id, value)] for the questions the candidate can answer; a fact whose configuration it cannot
    build (untied tables, no biases) is left out and listed in the check's data, not the whole check."""
    answered, unanswerable = [], {}
    for fact_id, ask in asked:
        try:
            answered.append((fact_id, ask()))
        except PartNotImplemented as exc:
            unanswerable[fact_id] = exc.fields.get("reason") or exc.message
    if unanswerable:
        check.record("facts_not_asked", unanswerable)
    if not answered:
        raise PartNotImplemented("none of these published facts is a configuration the candidate supports"
                                 f" ({'; '.join(sorted(set(unanswerable.values())))})")
    return answered


# -- §3 shapes ---------------------------------------------------------------------------------------
EXPLORER = {"src": [5, 3, 4, 7, 6], "tgt_in": [1, 6, 7, 4, 3, 5]}  # "c a b e d" and "<s> d e b a c"
PRACTICE = {"src": [5, 3, 4, 7, 6, 8, 9], "tgt_in": [1, 9, 8, 6, 7, 4, 3, 5]}  # any 7 letters, <s> + 7
VANILLA = {"src": [21, 135, 48], "tgt_in": [1, 200, 300, 400]}  # [I, love, you]; <BOS> ich liebe dich (ids assumed)


def shape_config(a: dict) -> ModelConfig:
    if a.get("d") == 512:  # the "Vanilla Transformer" example: base size, V = 30,000; one layer shows every shape
        return base_config(src_vocab=30000, tgt_vocab=30000, N=1)
    from conformance.config import toy_config

    return toy_config()


def shape_inputs(a: dict) -> dict:
    return {(5, 6): EXPLORER, (7, 8): PRACTICE, (3, 4): VANILLA}[(a["src_len"], a["tgt_len"])]


_shape_cache: dict = {}


def observed_shapes(candidate, config: ModelConfig, inputs: dict, *, with_attention: bool) -> dict:
    """The shapes the candidate's model produces; shapes need no particular weights, so its own init serves.
    Cached per candidate: both shape checks read the same models (the base-size one is large)."""
    key = (candidate.name, config, tuple(inputs["src"]), tuple(inputs["tgt_in"]), with_attention)
    if key not in _shape_cache:
        _shape_cache[key] = _observe(candidate, config, inputs, with_attention)
    return _shape_cache[key]


def _observe(candidate, config: ModelConfig, inputs: dict, with_attention: bool) -> dict:
    model = candidate.build_model(config, seed=0)
    weights = model.dump_weights()
    src, tgt_in = np.array([inputs["src"]]), np.array([inputs["tgt_in"]])
    table = weights.get("E", weights.get("E_tgt"))
    shapes = {
        "memory": model.encode(src).shape,
        "logits": model.forward(src, tgt_in).shape,
        "embedding_table": table.shape,
        "output_projection": (table.shape[1], table.shape[0]),
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


# Shapes the protocol can observe; the rest (Q/K/V per head, the FFN's hidden layer, the embedded
# inputs before the first layer, the token-id inputs) are not asked of the candidate.
OBSERVED_TENSORS = {
    "memory",
    "logits",
    "embedding_table",
    "output_projection",
    "enc_self_weights",
    "dec_self_weights",
    "cross_weights",
    "cross_per_head",
    "dec_self_per_head",
    "hidden_cells",
}
BATCHED = {"memory", "logits", "enc_self_weights", "dec_self_weights", "cross_weights"}


def expected_shape(entry: dict):
    """Symbolic shapes ("T", "S", "L_q") take their values from the fact's args."""
    value = entry["value"]
    if isinstance(value, int):
        return value
    return tuple(entry["args"].get(v, v) if isinstance(v, str) else v for v in value)


def assert_published_shapes(candidate, *, with_attention: bool):
    failures, compared = [], 0
    cache = {}
    for entry in published.of_kind("shape"):
        a = entry["args"]
        key = (a.get("d"), a["src_len"], a["tgt_len"])
        if key not in cache:
            cache[key] = observed_shapes(candidate, shape_config(a), shape_inputs(a), with_attention=with_attention)
        if a["tensor"] not in OBSERVED_TENSORS:  # inputs, or internals the protocol does not expose
            continue
        got = cache[key].get(a["tensor"])
        if got is None:
            continue
        if a.get("unbatched") and a["tensor"] in BATCHED:
            got = got[1:]
        compared += 1
        published.value(entry["id"])
        if got != expected_shape(entry):
            failures.append(f"{a['tensor']}: got {got}, published {entry['printed']!r} [{entry['id']}]")
    assert_true(compared > 0, "no published shape was observable", expected="some shapes", actual="none")
    assert_true(not failures, fmt_failures(failures), expected="the published shapes", actual="see message")


@claims.EXPLORER_SHAPES
@pytest.mark.requires("model.forward", "model.encode", "model.load_weights", "model.dump_weights")
def test_published_shapes_of_memory_and_logits(candidate):
    """Memory (1, 5, 64) and logits (1, 6, 13) for "c a b e d"; (1, 7, 64), (1, 8, 13) in the guided practice."""
    assert_published_shapes(candidate, with_attention=False)


@claims.PRACTICE_SHAPES
@pytest.mark.requires(
    "model.forward", "model.encode", "model.load_weights", "model.dump_weights", "model.attention_weights"
)
def test_published_shapes_of_attention_weights(candidate):
    """Attention weights (1, 4, 5, 5), (1, 4, 6, 6), (1, 4, 6, 5); 28 hidden cells above the diagonal for 8 tokens;
    the overview's causal masks for 4 and 5 positions, with weights exactly 0 where hidden."""
    assert_published_shapes(candidate, with_attention=True)
    model = candidate.build_model(toy_config(), seed=0)
    failures = []
    for entry in published.of_kind("causal_mask"):
        allowed = np.asarray(published.value(entry["id"]), dtype=bool)
        T = len(allowed)
        tgt_in = np.array([[1, *EXPLORER["tgt_in"][1:T]]])[:, :T]
        weights = np.asarray(model.attention_weights(np.array([EXPLORER["src"]]), tgt_in)["decoder.0.self_attn"])
        visible = weights[0] != 0.0  # (h, T, T); softmax of finite scores is never exactly 0
        exact_zero = published.value("vanilla.causal.exact_zero")
        if not ((visible == allowed).all() and (weights[0][:, ~allowed] == exact_zero).all()):
            hidden = (~visible).sum(axis=(-2, -1)).tolist()
            failures.append(f"{T} positions: decoder.0.self_attn hides {hidden} cells per head; published pattern"
                            f" {entry['printed']!r} [{entry['id']}, vanilla.causal.exact_zero]")
    assert_true(not failures, fmt_failures(failures), expected="the published causal patterns", actual="see message",
                likely="the causal mask blocks the diagonal, leaks the future, or masked weights are not exactly 0")
