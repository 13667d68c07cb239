"""Published-number checks and their randomised twins: flagging answers that were looked up, not computed.

Every check that compares against a number the lessons print has a twin that makes the same claim on
inputs drawn for the run (sizes, steps, logits nobody can predict). An implementation that hard-codes the
printed numbers passes the first and fails the twin; ``annotate_hard_coding`` then says so on the twin's
failure, unless a known bug explains it (the twin's diagnosis names a mutant): a bug that the printed
inputs happen not to exercise (padding, eps, a second axis) gives the same pattern honestly. Measured
over the 46 mutants (``transformer-conformance mutants --json``): no mutant is flagged.

Left out on purpose: ``pe_position_0_is_sin_0_and_cos_0`` (sin 0 and cos 0 whatever the frequencies: passing
it is no sign of a look-up; FSMT's frequencies pass it and were told "hard-coded?"), shape checks (every buggy
implementation has the right shapes) and the golden
tensors of the trained checkpoint and the base-size forward pass, whose inputs have no padding and whose
outputs survive many bugs (15 mutants pass one of them and fail its fresh-input twin).
"""

from __future__ import annotations

from conformance.results import FAILING, CheckResult

HARD_CODED = "matches the published values but not the formula on fresh inputs: hard-coded?"

_PE = ("pe_matches_formula_for_any_size",)
_WAVELENGTHS = ("pe_wavelengths_are_geometric_for_any_d_model",)
_ROTATION = ("pe_shift_by_k_is_a_rotation",)
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


def base_id(check_id: str) -> str:
    """``published_value[fact_id=params.total]`` -> ``published_value``."""
    return check_id.split("[", 1)[0]


def hard_coded_twins(results: list[CheckResult]) -> dict[tuple[str, str], list[str]]:
    """(impl, failing twin id) -> the published-number checks of that impl that passed; only twins whose
    failure no known bug explains."""
    passed = {(r.impl, base_id(r.id)): r.id for r in results if r.status == "passed"}
    failing = {(r.impl, base_id(r.id)) for r in results if r.status in FAILING and not r.diagnosis}
    found: dict[tuple[str, str], list[str]] = {}
    for (impl, check), check_id in passed.items():
        for twin in TWINS.get(check, ()):
            if (impl, twin) in failing:
                found.setdefault((impl, twin), []).append(check_id)
    return found


def annotate_hard_coding(results: list[CheckResult]) -> None:
    """Say on each failing twin that its published-number checks passed (once; idempotent)."""
    for (impl, twin), published in hard_coded_twins(results).items():
        for result in results:
            if result.impl == impl and base_id(result.id) == twin and HARD_CODED not in result.message:
                result.message += f"\n  {HARD_CODED} ({', '.join(sorted(published))} passed)"
                result.likely_cause = HARD_CODED  # the pattern outranks a numeric coincidence (kept in the message)
