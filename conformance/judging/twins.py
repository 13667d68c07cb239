"""Published-number checks and their randomised twins: flagging answers that were looked up, not computed.

Every check that compares against a number the lessons print has a twin that makes the same claim on
inputs drawn for the run (sizes, steps, logits nobody can predict). An implementation that hard-codes the
printed numbers passes the first and fails the twin. That pattern alone is no evidence: a bug the printed
inputs cannot show (padding, eps, a second axis, a second row) gives it honestly. So a failing twin is asked
one more question (``lookup_evidence``): the published inputs moved by a tiny amount (the next step, a
perturbation of 1e-4, one more row, one more token in the vocabulary). A computed answer, right or wrong, moves
as a formula does, by about as much as the paper's; an answer looked up stays frozen where the paper's moves, or
jumps by far more. ``annotate_hard_coding`` says "hard-coded?" only on that evidence, and only when no known
bug explains both the twin's failure and the published check's pass (a bug the catalogue declares to fail that
published check cannot be why it passed); otherwise the failure is described like any other. Whatever the
evidence, a published check whose twin failed earns no points (``unearned``, read by ``grading.points``).

Left out on purpose: ``pe_position_0_is_sin_0_and_cos_0`` (sin 0 and cos 0 whatever the frequencies: passing
it is no sign of a look-up; FSMT's frequencies pass it and were told "hard-coded?"), shape checks (every buggy
implementation has the right shapes) and the golden
tensors of the trained checkpoint and the base-size forward pass, whose inputs have no padding and whose
outputs survive many bugs (15 mutants pass one of them and fail its fresh-input twin).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from conformance.results import FAILING, CheckResult

HARD_CODED = "matches the published values but not the formula on fresh inputs: hard-coded?"

_PE = ("pe_matches_formula_for_any_size",)
_WAVELENGTHS = ("pe_wavelengths_are_geometric_for_any_d_model",)
# The rotation pairs the lessons print are PE values at positions 0, 10 and 40: a table that is a rotation but not
# the paper's (positions counted from 1) passes the rotation twin, so the table's own twin is theirs too.
_ROTATION = ("pe_shift_by_k_is_a_rotation", "pe_matches_formula_for_any_size")
_LAYER_NORM = ("layer_norm_matches_formula",)
_LRATE = ("lrate_matches_formula_for_any_step",)
_SMOOTHING = ("smoothed_loss_matches_formula_with_padding",)
_COUNT = ("parameter_count_matches_formula_for_any_config",)

TWINS: dict[str, tuple[str, ...]] = {
    "published_positional_encoding_values": _PE,
    "pe_matches_published_values": _PE,
    "published_wavelengths": _WAVELENGTHS,
    "pe_wavelengths_match_published_values": _WAVELENGTHS,
    "published_rotation_pairs": _ROTATION,
    "pe_shift_is_published_rotation": _ROTATION,
    "published_layer_norm_example": _LAYER_NORM,
    "layer_norm_matches_published_example": _LAYER_NORM,
    "published_learning_rates": _LRATE,
    "lrate_matches_published_paper_table": _LRATE,
    "lrate_matches_published_toy_values": _LRATE,
    "lrate_matches_the_toy_training_log": _LRATE,
    "published_label_smoothing_values": _SMOOTHING,
    "smoothed_loss_matches_published_floor_and_sure_model": _SMOOTHING,
    "smoothed_target_matches_published_values": _SMOOTHING,
    "published_parameter_counts": _COUNT,
    "parameter_count_matches_published_value": _COUNT,
    "parameter_count_without_attention_biases": _COUNT,
}
"""Published-number check id (without parameters) -> the randomised twins that make the same claim."""

ON_EVIDENCE: dict[str, tuple[str, ...]] = {"pe_position_0_is_sin_0_and_cos_0": _PE}
"""Published checks a wrong table passes honestly (sin 0 and cos 0 whatever the frequencies: a failing twin alone
withholds nothing) whose points a look-up of their twin, found on evidence, takes all the same."""


def base_id(check_id: str) -> str:
    """``published_value[fact_id=params.total]`` -> ``published_value``."""
    return check_id.split("[", 1)[0]


# -- the evidence of a look-up: the published inputs moved a little ----------------------------------------
JUMP = 10.0  # a computed answer moves at most this many times as far as the paper's (plus the tolerance)


def _moves(candidate_pair, paper_pair, atol: float) -> str | None:
    """"frozen" when the paper's answer moves and the candidate's does not, "jump" when the candidate's moves far
    more than the paper's; None when it moves as a computed answer does."""
    before, after = (np.asarray(v, np.float64) for v in candidate_pair)
    paper_before, paper_after = (np.asarray(v, np.float64) for v in paper_pair)
    if before.shape != after.shape or not (np.isfinite(before).all() and np.isfinite(after).all()):
        return "jump"
    moved, paper_moved = float(np.abs(after - before).max()), float(np.abs(paper_after - paper_before).max())
    if moved == 0.0 and paper_moved > atol:
        return "frozen"
    if abs(moved - paper_moved) > JUMP * paper_moved + atol:
        return "jump"
    return None


def _relative(pair):
    before, after = pair
    return 0.0, (after - before) / abs(before) if before else 0.0


def _rates(candidate) -> list[str | None]:
    from conformance.paper import formulas

    points = [(s, 512, 4000) for s in (1, 100, 1000, 4000, 10000, 40000, 100000)]
    points += [(s, 64, 400) for s in (100, 400, 1600, 2, 501, 1001, 2001, 3001)]
    found = []
    for step, d, w in points:
        mine = (candidate.learning_rate(step, d, w), candidate.learning_rate(step + 1, d, w))
        paper = (formulas.lrate(step, d, w), formulas.lrate(step + 1, d, w))
        found.append(_moves(_relative(mine), _relative(paper), 1e-6))
    return found


def _layer_norm(candidate) -> list[str | None]:
    from conformance.paper import formulas

    x = np.array([1.0, 2.0, 3.0, 6.0])
    ones, zeros = np.ones(4), np.zeros(4)
    found = []
    for delta in (np.array([0.3, -0.2, 0.5, 0.1]), np.array([-0.4, 0.1, 0.2, -0.3])):
        moved = x + 1e-4 * delta
        mine = (candidate.layer_norm(x, ones, zeros, 1e-5), candidate.layer_norm(moved, ones, zeros, 1e-5))
        paper = (formulas.layer_norm(x, ones, zeros, 1e-5), formulas.layer_norm(moved, ones, zeros, 1e-5))
        found.append(_moves(mine, paper, 1e-6))
    return found


def _table(candidate) -> list[str | None]:
    """The published tables asked with one more row: a computed table's first rows do not depend on how many."""
    found = []
    for n, d in ((3, 64), (2, 64), (2, 512), (50, 64)):
        first, more = candidate.positional_encoding(n, d), candidate.positional_encoding(n + 1, d)[:n]
        found.append("jump" if np.abs(np.asarray(more, np.float64) - np.asarray(first, np.float64)).max() > 1e-6
                     else None)
    return found


def _smoothing(candidate) -> list[str | None]:
    from conformance.paper import formulas

    V, eps, right, no_pad = 13, 0.1, 5, 12
    q = formulas.smoothed_target(V, eps, right)[None]
    sure = np.zeros((1, V))
    sure[0, right] = 20.0
    found = []
    for logits in (np.log(q), sure):
        moved = logits + 1e-4 * np.random.default_rng(0).normal(0, 1, logits.shape)
        args = (np.array([right]), eps, no_pad)
        mine = (candidate.label_smoothed_loss(logits, *args), candidate.label_smoothed_loss(moved, *args))
        paper = (formulas.smoothed_loss(logits, *args), formulas.smoothed_loss(moved, *args))
        found.append(_moves(mine, paper, 1e-6))
    return found


def _counts(candidate) -> list[str | None]:
    from conformance.config import base_config, german_config, toy_config
    from conformance.weights import parameter_count

    found = []
    for config in (base_config(), base_config(tie_output=False), toy_config(), german_config(),
                   base_config(attention_bias=False)):
        more = config.replace(src_vocab=config.src_vocab + 1, tgt_vocab=config.tgt_vocab + 1)
        mine = (candidate.parameter_count(config), candidate.parameter_count(more))
        paper = (parameter_count(config), parameter_count(more))
        found.append(_moves(mine, paper, 0.5))
    return found


LOOKUPS: dict[tuple[str, ...], Callable] = {_PE: _table, _WAVELENGTHS: _table, _ROTATION: _table,
                                            _LAYER_NORM: _layer_norm, _LRATE: _rates, _SMOOTHING: _smoothing,
                                            _COUNT: _counts}
TWIN_IDS = {twin for twins in TWINS.values() for twin in twins}


def lookup_evidence(candidate, check_id: str) -> dict | None:
    """For a failing twin: do the published inputs, moved a little, move the candidate's answer as they move the
    paper's? {"looked_up", "frozen", "jumps", "points"}; a look-up when at least half the points are frozen or
    jump. None for a check that is no twin, or a part that cannot be asked."""
    twin = base_id(check_id)
    probe = next((fn for group, fn in LOOKUPS.items() if twin in group), None)
    if probe is None:
        return None
    try:
        found = probe(candidate)
    except Exception:  # noqa: BLE001 - a part that cannot answer the moved inputs gives no evidence either way
        return None
    frozen, jumps = found.count("frozen"), found.count("jump")
    return {"looked_up": bool(found) and 2 * (frozen + jumps) >= len(found), "frozen": frozen, "jumps": jumps,
            "points": len(found)}


def hard_coded_twins(results: list[CheckResult]) -> dict[tuple[str, str], list[str]]:
    """(impl, failing twin id) -> the published-number checks of that impl that passed and that no known bug of the
    twin's diagnosis passes honestly; only twins whose published inputs, moved a little, gave evidence of a
    look-up."""
    passed = {(r.impl, base_id(r.id)): r.id for r in results if r.status == "passed"}
    failing = {(r.impl, base_id(r.id)): r for r in results if r.status in FAILING
               and ((r.data or {}).get("lookup") or {}).get("looked_up")}
    found: dict[tuple[str, str], list[str]] = {}
    for (impl, check), check_id in passed.items():
        for twin in TWINS.get(check, ()):
            failure = failing.get((impl, twin))
            if failure is not None and not known_bug_passes(failure.diagnosis, check_id):
                found.setdefault((impl, twin), []).append(check_id)
    return found


def known_bug_passes(diagnosis: list[dict] | None, published_check: str) -> bool:
    """Whether a known bug the diagnosis names could give this published check's pass honestly: one the catalogue
    does not declare to fail it (eps outside the root passes the LayerNorm example). A bug declared to fail it (an
    unbiased variance fails the example) explains the twin's failure, never the pass: that takes a look-up.
    A bug the catalogue does not list is given the benefit of the doubt."""
    declared = _declared_catches()
    for match in diagnosis or []:
        bugs = match.get("mutants") or [match["mutant"]]
        # a combination fails what one of its bugs fails (two bugs cancelling on the published inputs: not assumed)
        if any(bug not in declared for bug in bugs) or not any(published_check in declared[bug] for bug in bugs):
            return True
    return False


@functools.cache
def _declared_catches() -> dict[str, frozenset[str]]:
    """{mutant: the checks it is declared to fail or err on} (implementations/mutants/expected.toml)."""
    from conformance.implementations import mutants

    return {name: expected.caught_by | expected.errored for name, expected in mutants.expected().items()}


def unearned(checks: list[dict]) -> dict[str, tuple[str, str]]:
    """{published-number check id: (its randomised twin, what became of it: "failed", "error" or "looked up")}: a
    published example answered right is no evidence of a computed answer when the same claim on fresh inputs was
    not, or was refused on every fresh input it drew ("refused"); a twin not implemented for want of its part,
    blocked or supplied says nothing either way, and is not counted."""
    failed = {base_id(check["id"]): (check["id"], check["status"]) for check in checks
              if base_id(check["id"]) in TWIN_IDS and check["status"] in FAILING}
    # a twin that drew fresh inputs and had every one refused (not implemented there, where the published ones were
    # answered): as little evidence of a computed answer as a failed one
    failed |= {base_id(check["id"]): (check["id"], "refused") for check in checks
               if base_id(check["id"]) in TWIN_IDS and check["status"] == "not_implemented"
               and (check.get("examples") or {}).get("skipped", 0) > 0
               and (check.get("examples") or {}).get("ran", 0) == 0}
    looked_up = {base_id(found["check"]): (found["check"], "looked up") for found in flagged_look_ups(checks)}
    found = {}
    for check in checks:
        check_base = base_id(check["id"])
        twin = next((failed[twin] for twin in TWINS.get(check_base, ()) if twin in failed), None) or \
            next((looked_up[twin] for twin in ON_EVIDENCE.get(check_base, ()) if twin in looked_up), None)
        if twin is not None:
            found[check["id"]] = twin
    return found


def flagged_look_ups(checks: list[dict]) -> list[dict]:
    """The twins the report flags as a look-up on evidence (``annotate_hard_coding``), each with the published
    checks it belongs to that passed: [{"check": twin id, "published": [ids]}]."""
    passed = [check["id"] for check in checks if check["status"] == "passed"]
    return [{"check": check["id"],
             "published": [p for p in passed if base_id(check["id"]) in TWINS.get(base_id(p), ())]}
            for check in checks if "hard-coded?" in (check.get("likely_cause") or "")]


def annotate_hard_coding(results: list[CheckResult]) -> None:
    """Say on each failing twin that its published-number checks passed (once; idempotent)."""
    for (impl, twin), published in hard_coded_twins(results).items():
        for result in results:
            if result.impl == impl and base_id(result.id) == twin and HARD_CODED not in result.message:
                lookup = result.data["lookup"]
                result.message += (f"\n  {HARD_CODED} ({', '.join(sorted(published))} passed; the published inputs"
                                   f" moved a little: {lookup['frozen']} of {lookup['points']} answers frozen,"
                                   f" {lookup['jumps']} jumped, where a formula's move smoothly)")
                result.likely_cause = HARD_CODED  # the pattern outranks a numeric coincidence (kept in the message)
