"""One home per known bug: the catalogue (implementations/mutants/) is the only place a bug is described.

A bug the diagnosis recognises by its signature without rerunning it (the extra final LayerNorm after a stack, a
causal pattern of hidden cells) has one detector, and every sentence said of it is its mutant module's
(``SIGNATURES``, read by ``mutants.signatures``); no check holds a list of wrong formulas or names a mutant; and
the diagnosis composes mutants through the catalogue's public ``mutants.compose``, not by reading their classes.
"""

import ast
import re
from pathlib import Path

import numpy as np
import pytest
from test_ablation import locate as locate_model_only
from test_ablation import model_only
from test_localise_stack import candidate, locate

from conformance.diagnosis import causal_patterns, structure
from conformance.diagnosis.structure import EXTRA_NORM, find_structure
from conformance.implementations import mutants

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(path for folder in ("conformance", "implementations", "reports")
                 for path in (ROOT / folder).rglob("*.py"))
CHECKS = sorted((ROOT / "conformance" / "judging" / "checks").glob("*.py"))
EXTRA_NORM_MODULE = ROOT / "implementations" / "mutants" / f"{EXTRA_NORM}.py"
SIGNED = {name: said for name in mutants.names() if (said := mutants.signatures(name))}


def strings(path: Path, *, docstrings: bool = True) -> list[str]:
    """The string constants of a module (adjacent literals joined, the literal parts of f-strings)."""
    tree = ast.parse(path.read_text())
    skipped = set()
    if not docstrings:
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body \
                    and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
                skipped.add(id(node.body[0].value))
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped]


def fragments(sentence: str) -> list[str]:
    """The literal stretches of a sentence between its placeholders ("{last}"), those long enough to be its own."""
    return [part for part in re.split(r"\{\w+\}", sentence) if len(part.strip()) >= 20]


def homes(fragment: str) -> list[str]:
    return [str(path.relative_to(ROOT)) for path in SOURCES if any(fragment in text for text in strings(path))]


def test_the_catalogue_declares_the_signatures_the_diagnosis_says():
    assert set(SIGNED[EXTRA_NORM]) == {"probe", "after_layers", "sublayers_off", "sublayers_off_pre_norm"}
    for name in ("no_causal_mask", "causal_diagonal_blocked", "attention_maps_transposed", "attention_mask_inverted"):
        assert "causal_pattern" in SIGNED[name], name
    assert structure.PATTERNS[EXTRA_NORM] == SIGNED[EXTRA_NORM]["probe"]


@pytest.mark.parametrize("name", sorted(SIGNED))
def test_each_sentence_about_a_known_bug_lives_in_its_mutant_module_alone(name):
    """A second copy of a sentence (a detector's own dict, a check's likely cause) is a second catalogue."""
    for key, sentence in SIGNED[name].items():
        for fragment in fragments(sentence):
            assert homes(fragment) == [f"implementations/mutants/{name}.py"], (name, key, fragment)


def test_no_other_module_writes_a_sentence_about_an_extra_final_layer_norm():
    """Words about the norm after the stack, outside docstrings, are the mutant module's (``SIGNATURES``)."""
    about = re.compile(r"an extra LayerNorm|final LayerNorm after", re.IGNORECASE)
    found = [str(path.relative_to(ROOT)) for path in SOURCES if path != EXTRA_NORM_MODULE
             and any(about.search(text) for text in strings(path, docstrings=False))]
    assert found == [], f"a sentence about the extra final LayerNorm outside {EXTRA_NORM_MODULE.name}: {found}"


def test_one_function_normalises_once_more():
    """The signature (what comes before, normalised once more) is computed by ``structure.with_extra_norm`` alone:
    a second detector would call the plain LayerNorm itself."""
    callers = []
    for path in SOURCES:
        tree = ast.parse(path.read_text())
        for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
            for call in (n for n in ast.walk(function) if isinstance(n, ast.Call)):
                callee = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
                if callee == "plain_layer_norm":
                    callers.append(f"{path.relative_to(ROOT)}:{function.name}")
    assert sorted(set(callers)) == ["conformance/diagnosis/structure.py:with_extra_norm"], callers


def test_the_probe_the_localisation_and_the_ablation_all_ask_the_one_detector(monkeypatch):
    """With the detector blinded, none of the three finds the extra LayerNorm any more."""
    mutant = candidate(f"mutant:{EXTRA_NORM}")
    seen = (EXTRA_NORM in find_structure(mutant, "encoder"), "extra LayerNorm" in locate("encode", mutant),
            "normalised once more" in locate_model_only("decode", model_only(f"mutant:{EXTRA_NORM}")))
    assert seen == (True, True, True), seen
    monkeypatch.setattr(structure, "normalised_once_more", lambda *args, **kwargs: False)
    blind = (EXTRA_NORM in find_structure(mutant, "encoder"), "extra LayerNorm" in locate("encode", mutant),
             "normalised once more" in locate_model_only("decode", model_only(f"mutant:{EXTRA_NORM}")))
    assert blind == (False, False, False), blind


def test_each_causal_pattern_is_a_catalogue_entrys_signature():
    T = 4
    allowed = np.tril(np.ones((T, T), dtype=bool))
    heads = lambda visible: np.broadcast_to(visible, (2, T, T))  # noqa: E731
    patterns = {"no_causal_mask": np.ones((T, T), dtype=bool), "causal_diagonal_blocked": np.tril(allowed, -1),
                "attention_maps_transposed": allowed.T, "attention_mask_inverted": ~allowed}
    for name, visible in patterns.items():
        assert causal_patterns.causal_pattern_bug(heads(visible), allowed) == name
        assert causal_patterns.causal_pattern_cause(heads(visible), allowed) == SIGNED[name]["causal_pattern"]
    assert causal_patterns.causal_pattern_bug(heads(allowed & ~np.eye(T, dtype=bool) | np.eye(T, k=1, dtype=bool)),
                                              allowed) is None


@pytest.mark.parametrize("path", CHECKS, ids=lambda path: path.name)
def test_no_check_names_a_mutant_or_says_what_the_catalogue_says(path):
    """A check asks its question and states the paper; naming bugs is the diagnosis's, from the catalogue."""
    text = path.read_text()
    named = [name for name in mutants.names() if re.search(rf"\b{name}\b", text)]
    assert named == [] and "mutant:" not in text, f"{path.name} names {named}"
    said = [fragment for sentences in SIGNED.values() for sentence in sentences.values()
            for fragment in fragments(sentence) if any(fragment in s for s in strings(path))]
    assert said == [], f"{path.name} holds the catalogue's sentences: {said}"


def test_the_diagnosis_composes_mutants_through_the_catalogues_public_function():
    """diagnosis/combine.py reads no mutant's class (its MRO, its attributes, its formulas) and no private name of
    another module: how mutants compose is the catalogue's (``mutants.compose``)."""
    path = ROOT / "conformance" / "diagnosis" / "combine.py"
    tree = ast.parse(path.read_text())
    private = [alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
               for alias in node.names if alias.name.startswith("_")]
    reads = [node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
             and node.attr in ("__mro__", "__dict__", "fields")]
    calls = [node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
             and node.func.id in ("vars", "issubclass", "isinstance", "type")]
    assert (private, reads, calls) == ([], [], []), (private, reads, calls)
    assert "mutants.compose" in ast.unparse(tree)
