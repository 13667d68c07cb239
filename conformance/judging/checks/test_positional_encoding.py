"""§3.5 Positional encoding: PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(...).

Published numbers come from "The original transformer, step by step", Step 2; each published-number
check has a randomised twin that makes the same claim for sizes nobody can predict.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.compare import assert_shape
from conformance.config import toy_config
from conformance.diagnosis import Question
from conformance.errors import AdapterError, BadOutput
from conformance.judging.check import Holds
from conformance.paper import claims, formulas, published
from conformance.problems import questions
from conformance.problems.scenarios import LOADED_MODEL, loaded_model, model_weights, token_ids
from conformance.tolerances import ELEMENTWISE, HALF, UNIT_ROUNDOFF, Tolerance, for_candidate, half

SECTION = "§3.5 Positional encoding"
TABLE = pytest.mark.requires("positional_encoding")  # every check but the long source's, which needs the model only

# omega read back from float32 sin/cos of a slow pair (omega ~ 1e-4) keeps ~5 significant digits. In half precision
# sin omega and cos omega are each off by u relative, and so is omega = atan2(sin, cos): 2u, and 4u to spare (a
# wrong exponent moves the slowest wavelengths by 33 %).
READ_BACK = {"float32": Tolerance(1e-3, 0.0, "wavelength read back from float sin/cos values"),
             "float64": Tolerance(1e-3, 0.0, "wavelength read back from float sin/cos values"),
             **{dtype: Tolerance(4 * UNIT_ROUNDOFF[dtype], 0.0, f"wavelength read back from {dtype} sin/cos values:"
                                 f" 4u (u = 2^{int(np.log2(UNIT_ROUNDOFF[dtype]))})") for dtype in HALF}}
even_d_model = st.integers(1, 64).map(lambda half: 2 * half)



def pe_question(n: int, d_model: int) -> Question:
    """The table asked of any candidate, and a second one (12 positions, 32 columns) to confirm a match."""
    return Question(questions.positional_encoding_table, (n, d_model), probe=(12, 32))


@claims.POSITIONS_ADDED
@TABLE
def test_pe_has_one_row_per_position(candidate, check):
    """PE(n, d_model) has shape (n, d_model): added to the embeddings, not concatenated."""
    n, d_model = check.published("pe.table.shape")
    raw = candidate.call("positional_encoding", candidate.adapter, n, d_model)
    assert_shape(raw, (n, d_model), what=f"positional_encoding(n={n}, d_model={d_model})")
    record_table(check, raw, n, d_model)


def record_table(check, raw, n: int, d_model: int) -> None:
    """The lesson's table (positions.py) beside the formula's, for the report's heatmap; a table that
    is not a float array is left to the checks that read it through the candidate's validation."""
    if isinstance(raw, np.ndarray) and raw.dtype.kind == "f":
        check.record("pe", {"n": n, "d_model": d_model, "where": published.cite("pe.table.shape"),
                            "candidate": raw.astype(np.float64).round(4),
                            "golden": formulas.positional_encoding(n, d_model).round(4)})


@claims.POSITIONAL_ENCODING_BY_HAND
@TABLE
@pytest.mark.depends_on("pe_has_one_row_per_position")
def test_pe_matches_published_values(candidate, check):
    """PE at positions 1 and 2 equals the lesson's hand check (sin 1 = 0.841, ..., cos 2 = -0.416)."""
    pe = candidate.positional_encoding(3, 64)
    published_cells = (("pe.d64.pos1.first4", 1, slice(0, 4)), ("practice.pe.2.0", 2, 0), ("practice.pe.2.1", 2, 1))
    for fact_id, pos, cols in published_cells:
        check.close(pe[pos, cols], check.published(fact_id), check.printed(fact_id),
                    what=f"PE[{pos}, {cols}] (d_model=64) [{fact_id}]", ask=pe_question(3, 64))


@claims.POSITIONAL_ENCODING
@TABLE
@pytest.mark.depends_on("pe_has_one_row_per_position")
def test_pe_position_0_is_sin_0_and_cos_0(candidate, check):
    """At position 0 every sine is 0 and every cosine is 1: (0, 1, 0, 1, ...)."""
    pe = candidate.positional_encoding(1, 64)
    expected = np.tile(check.published("pe.pos0.pattern"), 32)
    check.close(pe[0], expected, for_candidate(ELEMENTWISE, candidate),
                what="PE[0] (d_model=64)", ask=pe_question(1, 64))


@claims.POSITIONAL_ENCODING
@TABLE
@pytest.mark.depends_on("pe_has_one_row_per_position")
@given(n=st.integers(1, 80), d_model=even_d_model)
def test_pe_matches_formula_for_any_size(candidate, check, n, d_model):
    """For any n and even d_model, PE equals the formula (interleaved sine/cosine from position 0)."""
    n = candidate.longest(n)  # no more positions than the candidate declares
    pe = candidate.positional_encoding(n, d_model)
    check.close(pe, formulas.positional_encoding(n, d_model), for_candidate(ELEMENTWISE, candidate),
                what=f"PE(n={n}, d_model={d_model})",
                ask=pe_question(n, d_model))


# The lesson's listing prints pairs 0, 1, d/4 and d/2 - 1 for both sizes.
PUBLISHED_WAVELENGTHS = {
    64: ("wavelength.d64.i0", "wavelength.d64.i1", "wavelength.d64.i16", "wavelength.d64.i31"),
    512: ("wavelength.d512.i0", "wavelength.d512.i1", "wavelength.d512.i128", "wavelength.d512.i255"),
}


def wavelengths(pe: np.ndarray, columns) -> np.ndarray:
    """Each pair's wavelength 2*pi/omega, with omega read off position 1 as atan2(sin, cos)."""
    omega = np.arctan2(pe[1, 0::2].astype(np.float64), pe[1, 1::2].astype(np.float64))
    return 2 * np.pi / omega[list(columns)]


@claims.POSITIONAL_ENCODING
@TABLE
@pytest.mark.depends_on("pe_has_one_row_per_position")
@pytest.mark.parametrize("d_model", [64, 512])
def test_pe_wavelengths_match_published_values(candidate, check, d_model):
    """Wavelengths form a geometric progression from 2*pi; the lesson prints four of them per d_model."""
    pe = candidate.positional_encoding(2, d_model)
    for fact_id in PUBLISHED_WAVELENGTHS[d_model]:
        pair = int(fact_id.rsplit(".i", 1)[1])
        check.close(wavelengths(pe, [pair]), [check.published(fact_id)], check.printed(fact_id),
                    what=f"wavelength of pair {pair} (d_model={d_model}) [{fact_id}]", ask=pe_question(2, d_model))


@claims.POSITIONAL_ENCODING
@TABLE
@pytest.mark.depends_on("pe_has_one_row_per_position")
@given(d_model=even_d_model.filter(lambda d: d >= 4))
def test_pe_wavelengths_are_geometric_for_any_d_model(candidate, check, d_model):
    """Every pair's wavelength is 2*pi * 10000^(2i/d_model), from 2*pi towards 10000 * 2*pi."""
    pe = candidate.positional_encoding(2, d_model)
    expected = 2 * np.pi / formulas.frequencies(d_model)
    got = wavelengths(pe, range(d_model // 2))
    # omega is read back from float sin/cos: relative error ~ float eps / omega for the slow pairs
    check.close(got, expected, for_candidate(READ_BACK, candidate), what=f"wavelengths (d_model={d_model})",
                ask=pe_question(2, d_model))


PUBLISHED_ROTATION = ((0, "rotation.pos0.turned", "rotation.pos0.shifted"),
                      (10, "rotation.pos10.turned", "rotation.pos10.shifted"),
                      (40, "rotation.pos40.turned", "rotation.pos40.shifted"))


@claims.POSITIONAL_ENCODING
@TABLE
@pytest.mark.depends_on("pe_has_one_row_per_position")
def test_pe_shift_is_published_rotation(candidate, check):
    """The lesson's check: pair i = 5 shifted by k = 3 is the same rotation at positions 0, 10 and 40."""
    pe = candidate.positional_encoding(50, 64)
    k, i = 3, 5
    turn = formulas.rotation(formulas.frequencies(64)[i] * k)
    for pos, turned, shifted in PUBLISHED_ROTATION:
        # components of a unit pair: in half precision each is off by up to 2u of the pair, not of itself
        check.close(turn @ pe[pos, 2 * i: 2 * i + 2], check.published(turned), check.printed(turned, magnitude=1.0),
                    what=f"R(omega_5 * 3) @ PE[{pos}, 10:12] [{turned}]", ask=pe_question(50, 64))
        check.close(pe[pos + k, 2 * i: 2 * i + 2], check.published(shifted), check.printed(shifted, magnitude=1.0),
                    what=f"PE[{pos + 3}, 10:12] [{shifted}]", ask=pe_question(50, 64))


@claims.POSITIONAL_ENCODING
@TABLE
@pytest.mark.depends_on("pe_has_one_row_per_position")
@given(d_model=even_d_model, pos=st.integers(0, 60), k=st.integers(1, 60), data=st.data())
def test_pe_shift_by_k_is_a_rotation(candidate, check, d_model, pos, k, data):
    """For any offset k, PE(pos + k) is PE(pos) turned by the angle omega_i * k in every pair i."""
    i = data.draw(st.integers(0, d_model // 2 - 1), label="i")
    pos, k = within(candidate.longest(pos + k + 1), pos, k)
    pe = candidate.positional_encoding(pos + k + 1, d_model)
    turn = formulas.rotation(formulas.frequencies(d_model)[i] * k)
    check.close(pe[pos + k, 2 * i: 2 * i + 2], turn @ pe[pos, 2 * i: 2 * i + 2].astype(np.float64),
                for_candidate(ELEMENTWISE, candidate),
                what=f"PE[{pos}+{k}, pair {i}] vs R(omega_{i} * {k}) @ PE[{pos}, pair {i}] (d_model={d_model})",
                ask=pe_question(pos + k + 1, d_model))


def within(n: int, pos: int, k: int) -> tuple[int, int]:
    """(pos, k) moved so that position pos + k is among the first n (k >= 1: n >= 2 assumed)."""
    k = max(1, min(k, n - 1))
    return max(0, min(pos, n - 1 - k)), k


def unowned(entries: list[dict]) -> list[dict]:
    """The facts no other check of this module compares against (each published number has one home)."""
    return [entry for entry in entries if entry["id"] not in OWNED]


OWNED = {"pe.table.shape", "pe.d64.pos1.first4", "practice.pe.2.0", "practice.pe.2.1", "pe.pos0.pattern",
         *(fact for facts in PUBLISHED_WAVELENGTHS.values() for fact in facts),
         *(fact for _, *facts in PUBLISHED_ROTATION for fact in facts)}


# -- Every other printed number of §3.5: each fact has one home, the checks above own theirs
@claims.POSITIONAL_ENCODING_BY_HAND
@TABLE
def test_published_positional_encoding_values(candidate, check):
    """Every printed PE value (0.841, 0.540, 0.682, 0.732, 0.909, -0.416, the (0, 1, 0, 1) of position 0)."""
    pairs = []
    for entry in unowned(published.of_kind("pe")):
        a = entry["args"]
        cols = a.get("cols", a.get("col"))
        pairs.append((entry["id"], candidate.positional_encoding(a["pos"] + 1, a["d"])[a["pos"], cols]))
    pe = candidate.positional_encoding(50, 64).astype(np.float64)  # positions.py: sinusoidal_positions(50, 64)
    shape, row1, first3 = published.listing_lines("positions.py")
    pairs += [(shape, pe.shape), (row1, pe[1, :4]), (first3, pe[1, :3])]
    for verify in ("pe_divisor", "pe_angle"):  # 10000^(2i/d) and pos / 10000^(2i/d), read off the candidate's PE
        for entry in unowned(published.of_kind(verify)):
            a = entry["args"]
            angle = pair_angle(candidate, a["i"], a["d"])
            pairs.append((entry["id"], per_angle(1.0, angle) if verify == "pe_divisor" else a["pos"] * angle))
    pairs += table_readings(candidate, pe)
    check.published_values(pairs, what="§3.5 PE", floor=for_candidate(ANGLE_READ_BACK, candidate))


def table_readings(candidate, pe: np.ndarray) -> list[tuple]:
    """What Step 2, its heatmap and the explorer say of the whole table ``pe`` = PE(50, 64): its bounds, position 0,
    its shape and slow columns, the pair indices its frequencies imply, PE(2) at any d_model, the base 10000."""
    tol = for_candidate(ELEMENTWISE, candidate)
    bounds = Holds(bool(pe.min() >= -1 - tol.atol and pe.max() <= 1 + tol.atol and round(pe.min()) == -1
                        and round(pe.max()) == 1), f"the table's values run from {pe.min():.4g} to {pe.max():.4g}")
    slow = published.fact("pe.heatmap.slow_columns")["args"]
    return [
        ("embed.pe_bounds", bounds), ("explorer.step3.pe_bounds", bounds),
        ("explorer.step4.pos0", position_0_pairs(pe[0], tol)),
        ("pe.heatmap.shape", pe.shape),
        ("pe.heatmap.slow_columns", slow_columns(pe, slow["sine_below"], slow["cosine_above"])),
        ("pe.pair_index_range", [pair_index(candidate, 0, 64), pair_index(candidate, 31, 64)],
         pair_index_read_back(for_candidate(ANGLE_READ_BACK, candidate), 31, 64)),
        ("practice.pe.any_d", same_start_at_any_d_model(candidate, tol)),
        # "10000^{2i/d_model}": the base, from the slowest pair at d_model 512 (omega = base^(-510/512))
        ("vanilla.pe.formula", pair_angle(candidate, 255, 512) ** (-512 / 510)),
    ]


def position_0_pairs(row: np.ndarray, tol: Tolerance) -> Holds:
    """Position 0's row is (sin 0, cos 0) = (0, 1) in every pair."""
    sines, cosines = np.abs(row[0::2]).max(), np.abs(row[1::2] - 1).max()
    return Holds(bool(sines <= tol.atol and cosines <= tol.atol),
                 f"PE[0] has sines up to {sines:.3g} from 0, cosines up to {cosines:.3g} from 1")


def slow_columns(pe: np.ndarray, sine_below: float, cosine_above: float) -> int:
    """How many of the table's last columns hardly move over its positions: a pair counts while its sine stays within
    ``sine_below`` of 0 and its cosine above ``cosine_above``, from the last pair back."""
    count = 0
    for i in reversed(range(pe.shape[1] // 2)):
        if np.abs(pe[:, 2 * i]).max() >= sine_below or pe[:, 2 * i + 1].min() <= cosine_above:
            break
        count += 2
    return count


def pair_index(candidate, pair: int, d: int) -> float:
    """The i of 10000^(-2i/d) that pair ``pair``'s frequency implies: i = pair for the paper's frequencies."""
    return -np.log(pair_angle(candidate, pair, d)) / np.log(10000) * d / 2


def pair_index_read_back(angle: Tolerance, slowest: int, d: int) -> Tolerance:
    """i = -ln(omega) d / (2 ln 10000): an angle off by a relative delta moves i by delta d / (2 ln 10000), and delta
    is at most angle.rtol + angle.atol / omega, largest at the slowest pair read (float32, d 64: 0.003 of a pair,
    far below a wrong exponent's half pair)."""
    omega = 10000.0 ** (-2 * slowest / d)
    return Tolerance(0.0, (angle.rtol + angle.atol / omega) * d / 2 / np.log(10000),
                     f"a pair index read back through the log of an angle {angle.reason}")


def same_start_at_any_d_model(candidate, tol: Tolerance) -> Holds:
    """PE(2, 0) and PE(2, 1) are sin 2 and cos 2 whatever d_model: the first pair turns at 1 / 10000^0."""
    starts = {d: candidate.positional_encoding(3, d)[2, :2].astype(np.float64) for d in (4, 64, 512, 1024)}
    first = starts[4]
    return Holds(all(np.abs(start - first).max() <= tol.atol for start in starts.values()),
                 "PE(2, 0:2) by d_model: " + ", ".join(f"{d}: {np.round(v, 4).tolist()}" for d, v in starts.items()))


# An angle read off float32 PE values through arctan2: a few float32 ulp (1e-7 relative); 1e-5 leaves a
# factor 100 and is far below any wrong exponent (10000^(2/64) vs 10000^(1/64): 33 %).
# In half precision each PE value is off by u, and so is the angle arctan2 reads back (at angles of order 1): 4u.
ANGLE_READ_BACK = {"float32": Tolerance(1e-5, 1e-7, "read back from float32 PE values through arctan2"),
                   **half(4, "PE values read back through arctan2")}


def pair_angle(candidate, i: int, d: int) -> float:
    """omega_i = 1 / 10000^(2i/d), the angle pair i turns per position, read off the candidate's PE[1]."""
    pe = candidate.positional_encoding(2, d).astype(np.float64)
    return float(np.arctan2(pe[1, 2 * i], pe[1, 2 * i + 1]))


def per_angle(numerator: float, angle: float) -> float:
    """``numerator / angle``; infinite for a pair that does not turn (its wavelength is then no number at all)."""
    return numerator / angle if angle else float("inf")


@claims.POSITIONAL_ENCODING
@TABLE
def test_published_wavelengths(candidate, check):
    """Every printed wavelength (6.3 ... 47,117.2 for d_model 64; 6.3 ... 60,611.5 for 512; columns 0, 8, 20)."""
    pairs = []
    for entry in unowned(published.of_kind("wavelength")):
        a = entry["args"]
        pair = a["i"] if "i" in a else a["col"] // 2
        pairs.append((entry["id"], per_angle(2 * np.pi, pair_angle(candidate, pair, a["d"]))))
    # "for d in (64, 512): ... for i in (0, 1, d // 4, d // 2 - 1)"
    for fact_id in published.listing_lines("wavelengths"):
        d = published.fact(fact_id)["value"][0]
        lengths = [per_angle(2 * np.pi, pair_angle(candidate, i, d)) for i in (0, 1, d // 4, d // 2 - 1)]
        pairs.append((fact_id, [d, *lengths]))
    for fact_id in ("pe.chart.col0.turns", "pe.chart.col8.turns", "pe.chart.col20.first_peak"):
        pairs.append((fact_id, chart_reading(candidate, published.fact(fact_id)["args"])))
    pairs.append(("pe.wavelength.paper_claim", progression_ends(candidate, READ_BACK)))
    check.published_values(pairs, what="§3.5 wavelength 2*pi/omega read off PE[1]")


def chart_reading(candidate, a: dict) -> float:
    """The columns chart's words: how many turns a column makes over the positions shown, or after how many positions
    it first peaks (a quarter of its wavelength)."""
    wavelength = per_angle(2 * np.pi, pair_angle(candidate, a["col"] // 2, a["d"]))
    return a["positions"] / wavelength if a["quantity"] == "turns" else wavelength / 4


def progression_ends(candidate, read_back: dict) -> Holds:
    """"From 2π to 10000 · 2π": the first pair's wavelength is 2π, and no pair's reaches 10000 · 2π (its limit)."""
    first_ok, ends = True, []
    for d in published.fact("pe.wavelength.paper_claim")["args"]["d"]:
        first, last = (per_angle(2 * np.pi, pair_angle(candidate, i, d)) for i in (0, d // 2 - 1))
        first_ok &= abs(first - 2 * np.pi) <= for_candidate(read_back, candidate).rtol * 2 * np.pi
        ends.append((d, first, last))
    return Holds(bool(first_ok and all(last < 10000 * 2 * np.pi for _, _, last in ends)),
                 "; ".join(f"d_model {d}: from {first:,.4f} to {last:,.1f}" for d, first, last in ends))


@claims.POSITIONAL_ENCODING
@TABLE
def test_published_rotation_pairs(candidate, check):
    """The rotation check's pairs: PE[pos + 3, 10:12] at positions 0, 10 and 40 (and R @ PE[pos])."""
    pairs = []
    for entry in unowned(published.of_kind("rotation")):
        a = entry["args"]
        pairs.append((entry["id"], rotation_pair(candidate, a["pos"], a["which"], a["k"], a["i"], a["d"])))
    k, i, d = (published.fact("rotation.pos0.turned")["args"][key] for key in ("k", "i", "d"))
    for fact_id in published.listing_lines("rotation check"):  # each line: pos, PE[pos + k] pair, R(k) @ PE[pos] pair
        pos = published.fact(fact_id)["value"][0]
        shifted, turned = (rotation_pair(candidate, pos, which, k, i, d) for which in ("shifted", "turned"))
        pairs.append((fact_id, [pos, *shifted, *turned]))
    pairs.append(("rotation.pair", pair_columns(candidate, i, d)))
    # "a linear function of PE_pos", "the offset k only", "a rotation of each pair": one matrix at every position
    pairs += [(entry["id"], same_rotation_everywhere(candidate, entry["args"]))
              for entry in published.of_kind("rotation_any_position")]
    check.published_values(pairs, what="§3.5 rotated PE pair", floor=unit_pair(candidate))


def pair_columns(candidate, i: int, d: int) -> list[int]:
    """The columns of the candidate's table that hold pair i's sine and cosine (found at position 1; -1: none)."""
    row = candidate.positional_encoding(2, d)[1].astype(np.float64)
    omega, tol = formulas.frequencies(d)[i], for_candidate(ELEMENTWISE, candidate)
    wanted = (np.sin(omega), np.cos(omega))
    found = [int(np.abs(row - value).argmin()) for value in wanted]
    return [col if abs(row[col] - value) <= tol.allowed(abs(value)) else -1 for col, value in zip(found, wanted,
                                                                                                  strict=True)]


def same_rotation_everywhere(candidate, a: dict) -> Holds:
    """turn(omega_i k) @ PE(pos) = PE(pos + k) in pair i at every position pos < n: one matrix, whatever pos."""
    k, i, n = a["k"], a["i"], a["n"]
    pe = candidate.positional_encoding(n + k, a["d"]).astype(np.float64)[:, 2 * i: 2 * i + 2]
    turn = formulas.rotation(formulas.frequencies(a["d"])[i] * k)
    worst = float(np.abs(pe[:n] @ turn.T - pe[k:]).max())
    allowed = unit_pair(candidate) or for_candidate(ELEMENTWISE, candidate)
    return Holds(worst <= allowed.atol + allowed.rtol,
                 f"|turn(omega_{i} * {k}) @ PE(pos) - PE(pos + {k})| up to {worst:.3g} over positions 0..{n - 1}")


def unit_pair(candidate) -> Tolerance | None:
    """In half precision, a component of a (sin, cos) pair is off by up to 2u of the pair's length 1, however small
    the component (the published values are rounded relative to themselves); None in float32 and float64."""
    dtype = candidate.conventions.dtype
    if dtype not in HALF:
        return None
    return Tolerance(0.0, 2 * UNIT_ROUNDOFF[dtype], f"components of a unit pair in {dtype}: 2u of 1")


def rotation_pair(candidate, pos: int, which: str, k: int, i: int, d: int) -> np.ndarray:
    """The rotation check's pair i at pos: PE[pos + k] ("shifted") or R(omega_i k) @ PE[pos] ("turned")."""
    pe = candidate.positional_encoding(pos + k + 1, d).astype(np.float64)
    if which == "shifted":
        return pe[pos + k, 2 * i : 2 * i + 2]
    w = k / 10000 ** (2 * i / d)
    return np.array([[np.cos(w), np.sin(w)], [-np.sin(w), np.cos(w)]]) @ pe[pos, 2 * i : 2 * i + 2]


LONG_SOURCE = 1_100  # past the 512- and 1,024-row tables of BERT-era code and of transformers' Marian and FSMT


@claims.ANY_LENGTH
@pytest.mark.requires(*LOADED_MODEL, "model.encode")
def test_source_longer_than_1024_tokens_is_encoded(candidate, check, rng):
    """encode() of one 1,100-token source (the toy sizes) returns a finite (1, 1100, d_model) memory: no positional
    table of fixed length refuses the positions past its last row.

    Only the long source's own refusal is a verdict about the positions: building, loading and encoding a short
    source run outside it, so the adapter's own error there is this check's error, never a table's length."""
    config = candidate.fit(toy_config())
    weights = model_weights(config, rng)
    src = token_ids(rng, config, 1, LONG_SOURCE)
    model = loaded_model(candidate, config, weights)
    model.encode(src[:, :SHORT_SOURCE])  # an error here is the adapter's, whatever the length
    try:
        memory = model.encode(src)
    except BadOutput:
        raise  # an answer of the wrong kind says so itself
    except AdapterError as exc:
        longest = longest_encoded(model, src)
        check.claim(False, f"encoding a source of {LONG_SOURCE} tokens failed ({exc.message}), and {longest} tokens"
                    f" encode: a positional table of fixed length (learned, or sinusoids precomputed for {longest}"
                    " positions) refuses the positions past its last row; the sinusoids of §3.5 are defined at every"
                    " position", expected=f"a (1, {LONG_SOURCE}, {config.d_model}) memory",
                    actual=f"{type(exc).__name__} past {longest} positions")
    assert_shape(memory, (1, LONG_SOURCE, config.d_model), what=f"encode(src (1, {LONG_SOURCE}))")
    check.claim(bool(np.isfinite(memory).all()), f"the memory of a {LONG_SOURCE}-token source has NaN or inf values",
                expected="finite values", actual="NaN/inf")


SHORT_SOURCE = 8


def longest_encoded(model, src: np.ndarray) -> int:
    """The most leading tokens of ``src`` the model encodes (bisection: it encodes SHORT_SOURCE, refuses all)."""
    good, bad = SHORT_SOURCE, src.shape[1]
    while bad - good > 1:
        middle = (good + bad) // 2
        try:
            model.encode(src[:, :middle])
            good = middle
        except AdapterError:
            bad = middle
    return good
