"""The published facts of the two specifying lessons: well-formed, and still true.

`fixtures/published.toml` records every number the lessons print; `conformance.fixtures.verify`
recomputes the reproducible ones and checks relations among the trained model's. These tests make
sure the file stays well-formed, that every fact keeps its status (a failure names the fact), that
the recorded errata are real, and that the verifier does catch a wrong golden value.
"""

from __future__ import annotations

import copy
import importlib.util
import os
import re
import tomllib
from pathlib import Path

import pytest

from conformance.fixtures import verify as V
from conformance.fixtures.verify_rounding import flatten, numbers_in

FACTS = V.load_facts()
BY_ID = {fact["id"]: fact for fact in FACTS}
HAS_TORCH = importlib.util.find_spec("torch") is not None


@pytest.fixture(scope="module")
def results() -> dict[str, V.Result]:
    # One pass over all facts; the listings and shape traces inside are cached anyway.
    facts = [fact for fact in FACTS if HAS_TORCH or not V.needs_torch(fact)]
    return {result.id: result for result in V.verify_all(facts)}


def expected_status(fact: dict) -> str:
    if "erratum" in fact:
        return "erratum confirmed"
    if fact["verify"] == "none":
        return "not reproducible"
    return "verified" if fact["reproducible"] else "relation verified"


# --- the file itself ---------------------------------------------------------------------------


def test_file_starts_with_schema_version_1():
    text = V.DEFAULT_PATH.read_text(encoding="utf-8")
    assert text.splitlines()[0] == "schema_version = 1"
    assert tomllib.loads(text)["schema_version"] == 1


def test_ids_are_unique():
    ids = [fact["id"] for fact in FACTS]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    assert not duplicates


def test_every_fact_has_the_required_keys():
    for fact in FACTS:
        missing = [key for key in V.REQUIRED_KEYS if key not in fact]
        assert not missing, f"{fact.get('id')}: missing {missing}"
        assert fact["kind"] in V.KINDS, fact["id"]
        assert fact["document"] in V.DOCUMENTS, fact["id"]
        assert fact["verify"] in V.VERIFIERS, fact["id"]
        assert isinstance(fact["reproducible"], bool), fact["id"]
        assert isinstance(fact["printed"], str) and isinstance(fact["quote"], str), fact["id"]


def test_rounding_fields_are_consistent():
    for fact in FACTS:
        assert not ("decimals" in fact and "significant" in fact), fact["id"]
        for key in ("decimals", "significant"):
            if key in fact:
                assert isinstance(fact[key], int) and fact[key] >= 0, fact["id"]
                assert not fact["rounding"].startswith("exact"), f"{fact['id']}: rounded but 'exact'"


def test_unverifiable_facts_say_so():
    # "none" is for timings, configuration and other models' figures; a reproducible fact needs a check.
    for fact in FACTS:
        if fact["verify"] == "none":
            assert not fact["reproducible"], fact["id"]


def _numbers(value) -> list[float] | None:
    flat = flatten(value)
    if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in flat):
        return [float(x) for x in flat]
    return None


def _is_subsequence(wanted: list[float], found: list[float]) -> bool:
    it = iter(found)
    return all(any(abs(w - f) <= 1e-9 * max(1.0, abs(w)) for f in it) for w in wanted)


# Printings whose value the words carry, not the digits: 'and so on', 'each', 'and back', ...
WORDED = {
    "diagram.ffn.sizes": "'from 64 to 256 numbers and back'",
    "pe.pair_index_range": "'0 to d_model/2 − 1', stored for d_model = 64",
    "explorer.step12.anti_diagonal": "'..., and so on'",
    "cross_chart.caption.anti_diagonal": "'..., and so on'",
    "kc.cross.anti_diagonal": "'position 1 reads source token 5, position 2 reads token 4'",
    "explorer.text.step11.d_half": "'0.5 each'",
    "toy_run.loop_steps": "'range(1, 3001)' runs 3,000 steps",
    "vanilla.mask.values": "'$-\\infty$'",
    "vanilla.causal.four_positions": "a LaTeX matrix of s_ij and -inf",
}


def test_printed_strings_show_the_recorded_values():
    """`value` is what `printed` says: its numbers appear in the printed text, in order."""
    for fact in FACTS:
        wanted = _numbers(fact["value"])
        printed = fact["printed"]
        # Symbolic or worded printings ('10000 · 2π', 'three turns') have no digits to compare.
        if wanted is None or not re.search(r"\d", printed) or "π" in printed or "√" in printed:
            continue
        if fact["id"] in WORDED:
            continue
        assert _is_subsequence(wanted, numbers_in(printed)), f"{fact['id']}: {printed!r} vs {fact['value']!r}"


REFERENCE_ARGS = ("other", "raw", "scaled", "labels", "greedy", "top_score", "other_scores")


def test_references_to_other_facts_resolve():
    for fact in FACTS:
        args = fact.get("args", {})
        refs = [args[key] for key in REFERENCE_ARGS if key in args] + list(args.get("rows", []))
        for text in (args.get("expr", ""), args.get("claim", "")):
            refs += re.findall(r"f\('([^']+)'", text)
        unknown = [ref for ref in refs if ref not in BY_ID]
        assert not unknown, f"{fact['id']}: unknown facts {unknown}"


# --- against the documents themselves, where this checkout has them ------------------------------


def _document_texts() -> dict[str, str]:
    """The lessons, found by their title line, in the seeds folder shared next to the repository."""
    root = Path(__file__).resolve().parents[1]
    candidates = [os.environ.get("CONFORMANCE_SEEDS", ""), root / "shared" / "seeds", root.parent / "shared" / "seeds"]
    for folder in map(Path, filter(None, candidates)):
        if folder.is_dir():
            texts = {}
            for path in folder.glob("*.txt"):
                text = path.read_text(encoding="utf-8")
                texts[text.splitlines()[0].strip()] = text
            if set(V.DOCUMENTS) <= set(texts):
                return texts
    pytest.skip("the specifying lessons are not in this checkout")


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_every_quote_is_in_its_document():
    texts = {title: _squash(text) for title, text in _document_texts().items()}
    missing = [fact["id"] for fact in FACTS if _squash(fact["quote"]) not in texts[fact["document"]]]
    assert not missing


def test_every_section_starts_with_a_heading_of_its_document():
    lines = {title: [line.strip() for line in text.splitlines()] for title, text in _document_texts().items()}
    for fact in FACTS:
        heading = fact["section"].split(" › ")[0]
        # A line that starts with it: the page's "Before you start" runs into its subtitle.
        assert any(line.startswith(heading) for line in lines[fact["document"]]), f"{fact['id']}: {heading!r}"


# --- every fact keeps its status ----------------------------------------------------------------


@pytest.mark.parametrize("fact_id", [fact["id"] for fact in FACTS])
def test_fact_holds(fact_id, results):
    fact = BY_ID[fact_id]
    if V.needs_torch(fact) and not HAS_TORCH:
        pytest.skip("needs torch")
    result = results[fact_id]
    assert result.status == expected_status(fact), result.message


def test_every_reproducible_fact_is_recomputed(results):
    """Reproducible facts are recomputed ("verified"), not merely recorded."""
    for fact in FACTS:
        if fact["reproducible"] and fact["id"] in results and "erratum" not in fact:
            assert results[fact["id"]].status == "verified", fact["id"]


def test_errata_are_real(results):
    """Each recorded erratum: the document's value really differs from the exact recomputation."""
    errata = [fact for fact in FACTS if "erratum" in fact]
    assert errata, "the documents' known slips should be recorded"
    for fact in errata:
        if fact["id"] in results:
            assert results[fact["id"]].status == "erratum confirmed", results[fact["id"]].message
            assert len(fact["erratum"]) > 40, f"{fact['id']}: say precisely where the document slips"


def test_coverage_adds_up(results):
    facts = [fact for fact in FACTS if fact["id"] in results]
    counts = V.coverage(facts, list(results.values()))
    assert counts["encoded"] == len(facts)
    assert counts["FAILED"] == 0
    assert sum(counts[status] for status in V.STATUSES) == counts["encoded"]
    assert counts["reproducible"] == sum(fact["reproducible"] for fact in facts)


# --- the verifier catches wrong golden values ----------------------------------------------------

MUTATIONS = [
    ("pe.d64.pos1.col0", "value", 0.842),  # sin 1 = 0.841
    ("lrate.paper.step4000", "value", 6.989e-04),  # 6.988e-04
    ("params.total", "value", 63082497),
    ("explorer.step1.token_ids", "value", [5, 3, 4, 7, 7]),  # relation: ids from the vocabulary
    ("explorer.step6.row_c", "value", [0.17, 0.30, 0.18, 0.22, 0.23]),  # relation: row sums to 1
    ("explorer.step3.c.scaled", "value", [-0.196, -0.045, -0.219, 0.187]),  # relation: 8 x embedding
    ("toy_run.log.step500.exact_match", "value", 88.7),  # not a whole count of 500
    ("diagram.cross_weights.shape", "value", [1, 4, 5, 6]),
    ("toy_run.log.step500.lr", "printed", "5.59e-03"),  # LambdaLR's rate, formatted as logged
    ("lrate.paper.peak.hand_product", "value", 6.98e-04),  # an erratum that no longer holds
]


@pytest.mark.parametrize("fact_id, key, wrong", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_a_wrong_golden_value_fails(fact_id, key, wrong):
    facts = copy.deepcopy(FACTS)
    target = next(fact for fact in facts if fact["id"] == fact_id)
    if V.needs_torch(target) and not HAS_TORCH:
        pytest.skip("needs torch")
    target[key] = wrong
    result = V.verify_fact(target, {fact["id"]: fact for fact in facts})
    assert result.status == "FAILED", result.message


def test_cli_exits_1_on_a_failure(tmp_path, capsys):
    text = V.DEFAULT_PATH.read_text(encoding="utf-8")
    broken = tmp_path / "broken.toml"
    broken.write_text(
        text.replace('printed = "0.841"\nvalue = 0.841', 'printed = "0.841"\nvalue = 0.842', 1), encoding="utf-8"
    )
    assert V.main([str(broken)]) == 1
    assert "FAILED" in capsys.readouterr().out


# --- the verifier recomputes with the suite's formulas, not copies of its own ------------------------


def _scaled(formula):
    return lambda *args: formula(*args) * 1.1


def _mask_ignored(formula):
    return lambda q, k, v, keep=None: formula(q, k, v)


FORMULA_USERS = [  # (a formula of conformance.paper.formulas, how it is broken, the kinds of fact that must fail)
    ("positional_encoding", _scaled, ("pe",)),
    ("frequencies", _scaled, ("pe_divisor", "wavelength", "rotation")),
    ("lrate", _scaled, ("lrate", "lambdalr_log")),
    ("smoothed_target", _scaled, ("label_smoothing",)),
    ("softmax", _scaled, ("masked_softmax",)),
    ("attention", _mask_ignored, ("permutation_equivariance",)),
]


@pytest.mark.parametrize("name, broken, kinds", FORMULA_USERS, ids=[f[0] for f in FORMULA_USERS])
def test_a_wrong_formula_fails_the_facts_recomputed_from_it(monkeypatch, name, broken, kinds):
    from conformance.paper import formulas

    monkeypatch.setattr(formulas, name, broken(getattr(formulas, name)))
    for kind in kinds:
        facts = [fact for fact in FACTS if fact["verify"] == kind and "erratum" not in fact]
        assert facts, kind
        passed = [r.id for r in V.verify_all(facts) if r.status != "FAILED"]
        # a fact whose value the wrong formula leaves as it is (sin 0 = 1.1 sin 0) may pass: most must not
        assert len(passed) < len(facts) / 2, f"{kind}: {len(passed)} of {len(facts)} still pass with {name} broken"


def test_the_layer_norm_example_is_normalised_by_the_formula(monkeypatch):
    from conformance.paper import formulas

    monkeypatch.setattr(formulas, "plain_layer_norm", _scaled(formulas.plain_layer_norm))
    facts = [fact for fact in FACTS if fact["verify"] == "layer_norm_example"
             and fact["args"]["quantity"] == "normalized"]
    assert facts and all(r.status == "FAILED" for r in V.verify_all(facts))
