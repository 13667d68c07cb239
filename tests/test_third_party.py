"""The third-party built-ins (``hf-marian``, ``hf-fsmt``): what the suite says about real code (docs/third-party.md).

Each deviation established by reading the implementation's source is asserted here as the check(s) that catch it and,
where the suite names it, by that name. FSMT has four deviations in one place (its positional encoding); each is
isolated by undoing the other three in FSMT's own ``SinusoidalPositionalEmbedding.get_embedding`` (``fsmt_table``),
so a test says which deviation a check catches. A deviation the suite catches without naming it has an
``xfail(strict=True)`` test asserting a name: the day the diagnosis names it, the test flips.
"""

from __future__ import annotations

import math
import re
import sys

import pytest
from conftest import certify_quietly

from conformance.boundary.loading import LoadError, import_target

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")
MODULES = {"hf-marian": "hf_marian", "hf-fsmt": "hf_fsmt", "opennmt-py": "onmt_py"}
PACKAGES = {"hf-marian": ("transformers", "hf"), "hf-fsmt": ("transformers", "hf"), "opennmt-py": ("onmt", "onmt")}
PE_CHECKS = {"pe_matches_published_values", "pe_position_0_is_sin_0_and_cos_0", "pe_matches_formula_for_any_size",
             "pe_wavelengths_match_published_values[d_model=64]", "pe_wavelengths_match_published_values[d_model=512]",
             "pe_wavelengths_are_geometric_for_any_d_model", "pe_shift_is_published_rotation",
             "pe_shift_by_k_is_a_rotation"}
PUBLISHED_PE = {"published_positional_encoding_values", "published_wavelengths", "published_rotation_pairs"}
MODEL_CHECKS = {"encode_matches_reference", "decode_matches_reference", "logits_match_reference",
                "logits_match_reference_at_base_size", "base_size_forward_matches_golden",
                "trained_checkpoint_outputs_match_golden", "trained_checkpoint_matches_reference_on_fresh_inputs",
                "trained_checkpoint_decodes_like_the_reference", "trained_checkpoint_attention_matches_golden"}
# Everything positional: the PE part, the published PE numbers, every model-level check (they add PE), and the
# embedded inputs' numbers ("the same embedding table, times 8, and the same positional encoding").
PE_EVERYWHERE = PE_CHECKS | PUBLISHED_PE | MODEL_CHECKS | {"published_embedded_inputs"}
ONLY_PE = "-k", "pe_ or published_positional or published_wavelengths or published_rotation or encode_matches"


def failed(report: dict) -> set[str]:
    return {c["id"] for c in report["checks"] if c["status"] == "failed"}


def causes(report: dict) -> dict[str, str | None]:
    return {c["id"]: c["likely_cause"] for c in report["checks"] if c["status"] == "failed"}


def named(report: dict, checks: set[str], mutant: str) -> set[str]:
    """The checks among ``checks`` whose likely cause names ``mutant:<mutant>``."""
    return {cid for cid, cause in causes(report).items() if cid in checks and cause and f"mutant:{mutant}" in cause}


# --------------------------------------------------------------------------------------------------
# Without the package: the built-in names the extra
# --------------------------------------------------------------------------------------------------


def hide(name: str, monkeypatch) -> str:
    """Make the built-in's package unimportable (and forget the adapter module); return the extra's install line."""
    package, extra = PACKAGES[name]
    monkeypatch.delitem(sys.modules, f"conformance.implementations.thirdparty.{MODULES[name]}", raising=False)
    for module in [m for m in sys.modules if m.startswith(f"{package}.")]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.setitem(sys.modules, package, None)  # import <package> -> ModuleNotFoundError
    return f"pip install 'transformer-conformance[{extra}]'"


@pytest.mark.parametrize("name", MODULES)
def test_a_missing_package_names_the_extra_to_install(name, monkeypatch):
    fix = hide(name, monkeypatch)
    with pytest.raises(LoadError, match=re.escape(f"not installed. Fix: {fix}")):
        import_target(name)


@pytest.mark.parametrize("name", MODULES)
def test_certify_without_the_package_exits_2_with_the_fix(name, certify, monkeypatch):
    fix = hide(name, monkeypatch)
    run = certify(name, "--no-training", "-k", "pe_position_0")
    assert run.code == 2 and fix in run.err + run.out, run.err


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", MODULES)
def test_half_precision_runs_the_modules_and_their_masks_in_that_dtype(name, dtype):
    """--dtype (declared "native"): the model's module cast to the half dtype and its passes in it; a layer built
    alone gets its additive mask in its own dtype (a float32 mask would widen the scores, or fail the matmul)."""
    import numpy as np
    import torch

    from conformance.config import toy_config
    from conformance.weights import model_shapes, random_weights, sub_weights

    pytest.importorskip(PACKAGES[name][0])
    adapter = import_target(name)
    want = getattr(torch, dtype)
    half = adapter.with_dtype(dtype)
    assert adapter.conventions.dtypes == {"float16": "native", "bfloat16": "native"}
    assert (half.conventions.dtype, adapter.conventions.dtype) == (dtype, "float32")
    cfg = toy_config(dropout=0.0, eps=adapter.conventions.supports.get("eps", (1e-6,))[0])
    weights = random_weights(model_shapes(cfg), np.random.default_rng(0))
    model = half.build_model(cfg.as_dict(), 0)
    model.load_weights(weights)
    assert {p.dtype for p in model.module.parameters()} == {want}
    src, tgt_in = np.array([[5, 3, 4, 6, 2], [5, 3, 2, 0, 0]]), np.array([[1, 6, 7, 4], [1, 6, 0, 0]])
    logits, single = model.forward(src, tgt_in), adapter.build_model(cfg.as_dict(), 0)
    single.load_weights(weights)
    assert np.isfinite(logits).all()
    assert np.abs(logits - single.forward(src, tgt_in)).max() <= 0.3 * np.abs(logits).max()
    to_half = (lambda a: np.asarray(a, np.float16)) if dtype == "float16" else (  # noqa: E731
        lambda a: torch.from_numpy(np.asarray(a, np.float32)).to(want).float().numpy())
    x = to_half(np.random.default_rng(1).normal(size=(2, 5, cfg.d_model)))
    keep = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], dtype=bool)
    layer = {k: to_half(v) for k, v in sub_weights(weights, "encoder.0.").items()}
    out = half.encoder_layer(x, layer, cfg.h, cfg.eps, keep)
    assert np.isfinite(out).all() and out.dtype == (np.float16 if dtype == "float16" else np.float32)


# --------------------------------------------------------------------------------------------------
# With the package: the certify runs (slow) and each deviation
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fsmt():
    return pytest.importorskip("transformers.models.fsmt.modeling_fsmt")


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """reports[name]: the built-in's ``certify --no-training`` report, run once, skipped without its package."""

    class Reports(dict):
        def __missing__(self, name):
            pytest.importorskip(PACKAGES[name][0])
            self[name] = certify_quietly(tmp_path_factory.mktemp(MODULES[name]), name, "--no-training")
            return self[name]

    return Reports()


def fsmt_table(*, interleaved: bool, paper_frequencies: bool, from_padding_idx: bool):
    """FSMT's ``get_embedding(num_embeddings, embedding_dim, padding_idx)`` with chosen deviations undone: row r holds
    PE(r - padding_idx - 1) (positions from 0) unless ``from_padding_idx``; the padding row stays 0 (FSMT's)."""
    import torch

    def get_embedding(n, d, padding_idx):
        half = d // 2
        step = math.log(10000) / (half if paper_frequencies else half - 1)  # paper: 10000^(-2i/d)
        shift = 0 if from_padding_idx else padding_idx + 1
        angle = (torch.arange(n).double() - shift)[:, None] * torch.exp(-step * torch.arange(half).double())[None]
        pair = (torch.sin(angle), torch.cos(angle))
        pe = (torch.stack(pair, -1).reshape(n, d) if interleaved else torch.cat(pair, 1)).float()
        pe[padding_idx] = 0
        return pe

    return staticmethod(get_embedding)


VARIANTS = {  # the one deviation left in each
    "halves": dict(interleaved=False, paper_frequencies=True, from_padding_idx=False),
    "frequencies": dict(interleaved=True, paper_frequencies=False, from_padding_idx=False),
    "from_padding_idx": dict(interleaved=True, paper_frequencies=True, from_padding_idx=True),
    "padding_rows_zero": dict(interleaved=True, paper_frequencies=True, from_padding_idx=False),
}


@pytest.fixture(scope="module")
def fsmt_variants(fsmt, tmp_path_factory):
    found = {}
    for variant, deviations in VARIANTS.items():
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(fsmt.SinusoidalPositionalEmbedding, "get_embedding", fsmt_table(**deviations))
            args = ("--no-training",) if variant == "padding_rows_zero" else ("--no-training", *ONLY_PE)
            found[variant] = certify_quietly(tmp_path_factory.mktemp(variant), "hf-fsmt", *args)
    return found


# -- hf-marian: one deviation, sines then cosines (modeling_marian.py:84-91) ----------------------------------


@pytest.mark.slow
def test_marian_fails_exactly_the_positional_checks(reports):
    assert failed(reports["hf-marian"]) == PE_EVERYWHERE


@pytest.mark.slow
def test_marian_halves_are_named_on_the_part_and_on_the_model(reports):
    report = reports["hf-marian"]
    assert named(report, PE_CHECKS, "pe_halves_concatenated") == PE_CHECKS
    model = MODEL_CHECKS - {"base_size_forward_matches_golden", "trained_checkpoint_attention_matches_golden"}
    assert named(report, model, "pe_halves_concatenated") == model


@pytest.mark.slow
@pytest.mark.parametrize("name", ["hf-marian", "hf-fsmt"])
def test_a_fully_masked_row_gets_uniform_weights_an_advisory(name, reports):
    """HF fills masked scores with the dtype's minimum, not -inf: a row with every key masked is uniform, which
    the diagnosis names from every row's weights (a fill of 0 would also read the hidden keys of the others)."""
    check = next(c for c in reports[name]["checks"] if c["id"] == "fully_masked_row_gives_zero_weights_and_only_b_O")
    assert check["status"] == "advisory"
    assert (check["likely_cause"] or "").endswith("(mutant:masked_scores_filled_with_minus_1e9)"), check["likely_cause"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["hf-marian", "hf-fsmt", "opennmt-py"])
def test_an_all_padding_source_sentence_read_uniformly_is_an_advisory(name, reports):
    """The model-level fully-masked convention, for finite fills: HF's finfo.min (masking_utils.py:615-617,
    modeling_fsmt.py:763), OpenNMT-py's -1e18 (modules/multi_headed_attn.py:237), where OpenNMT-py exposes no
    attention part for the bare fully-masked checks."""
    statuses = {c["id"]: c["status"] for c in reports[name]["checks"]}
    assert statuses["fully_masked_source_sentence_is_invisible_to_the_decoder"] == "advisory"


@pytest.mark.slow
def test_marian_empty_source_is_named_with_its_table_bug(reports):
    """Its sines-then-cosines (a NumPy mutant, named on the logits) and its finite fill (a torch one) compose:
    the table bug is carried into the reference as its positional-encoding formula (diagnosis/combine.py)."""
    check = next(c for c in reports["hf-marian"]["checks"]
                 if c["id"] == "fully_masked_source_sentence_is_invisible_to_the_decoder")
    cause = check["likely_cause"] or ""
    assert cause.endswith("(mutant:masked_scores_filled_with_minus_1e9 + mutant:pe_halves_concatenated)"), cause


@pytest.mark.slow
def test_opennmt_finite_fill_is_named_with_its_profile(reports):
    """OpenNMT-py's pre-norm and final norms, confirmed on its encoder's output, lead the search; the -1e18 fill
    of a fully masked row is the one more bug the all-padding sentence shows."""
    check = next(c for c in reports["opennmt-py"]["checks"]
                 if c["id"] == "fully_masked_source_sentence_is_invisible_to_the_decoder")
    cause = check["likely_cause"] or ""
    assert cause.endswith("(mutant:extra_final_layer_norm + mutant:masked_scores_filled_with_minus_1e9 +"
                          " mutant:pre_norm)"), cause


@pytest.mark.slow
def test_marian_1024_row_table_is_an_advisory_that_says_so(reports):
    """max_position_embeddings rows, 1,024 by default (modeling_marian.py:448-449): a longer source raises."""
    check = next(c for c in reports["hf-marian"]["checks"] if c["id"] == "source_longer_than_1024_tokens_is_encoded")
    assert check["status"] == "advisory" and "positional table of fixed length" in check["message"], check["message"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["hf-marian", "hf-fsmt"])
def test_what_the_code_fixes_is_skipped_not_failed(name, reports):
    statuses = {c["id"]: c["status"] for c in reports[name]["checks"]}
    assert statuses["parameter_count_without_attention_biases"] == "not_implemented"
    assert statuses["model_has_no_parameters_beyond_the_paper"] == "passed"
    assert statuses["parameter_count_matches_formula_for_any_config"] == "passed"


# -- hf-fsmt: four deviations in SinusoidalPositionalEmbedding (modeling_fsmt.py:1075-1106) -------------------


FSMT_PE_TRIPLE = "(mutant:pe_frequencies_over_d_minus_2 + mutant:pe_halves_concatenated + mutant:pe_positions_from_one)"


FSMT_ALL_FOUR = FSMT_PE_TRIPLE[:-1] + " + mutant:pe_zero_at_padding)"
FSMT_MODEL_CHECKS = {"encode_matches_reference", "decode_matches_reference", "logits_match_reference",
                     "logits_match_reference_at_base_size"}


@pytest.mark.slow
def test_fsmt_names_three_deviations_on_the_part_and_all_four_on_the_model(reports):
    """Four deviations at once: no single mutant fits. On the PE part (where the zero row at padding does not
    show) the combination of the other three is named; the model checks, which run after the parts, start from
    it (the candidate's deviation profile) and add the fourth, seen where the source is padded."""
    report = reports["hf-fsmt"]
    assert failed(report) == PE_EVERYWHERE
    found = {cid: cause for cid, cause in causes(report).items() if cause is not None}
    assert {"pe_matches_published_values", "pe_wavelengths_are_geometric_for_any_d_model",
            "pe_shift_is_published_rotation", "pe_shift_by_k_is_a_rotation"} <= set(found), found
    # each PE check names the triple, or the part of it that its question can see; never another bug
    for cid, cause in found.items():
        if cid.startswith("pe_"):
            assert set(re.findall(r"mutant:(\w+)", cause)) <= set(re.findall(r"mutant:(\w+)", FSMT_PE_TRIPLE)), cause
    assert sum(FSMT_PE_TRIPLE in cause for cause in found.values()) >= 4, found
    for cid in FSMT_MODEL_CHECKS:
        assert found.get(cid, "").endswith(FSMT_ALL_FOUR), (cid, found.get(cid))


@pytest.mark.slow
def test_fsmt_halves_alone_are_named(fsmt_variants):
    report = fsmt_variants["halves"]
    assert failed(report) >= PE_CHECKS | PUBLISHED_PE | {"encode_matches_reference"}
    assert named(report, PE_CHECKS, "pe_halves_concatenated") == PE_CHECKS


@pytest.mark.slow
def test_fsmt_positions_from_padding_idx_plus_one_are_named_positions_from_one(fsmt_variants):
    """make_positions numbers tokens from padding_idx + 1 (modeling_fsmt.py:1095-1106): with pad_id 0, from 1."""
    report = fsmt_variants["from_padding_idx"]
    assert failed(report) >= PE_CHECKS - {"pe_shift_by_k_is_a_rotation"} | {"encode_matches_reference"}
    assert named(report, PE_CHECKS, "pe_positions_from_one") == PE_CHECKS - {"pe_shift_by_k_is_a_rotation"}


FREQUENCY_CHECKS = PE_CHECKS - {"pe_position_0_is_sin_0_and_cos_0"}  # PE(0) does not depend on the frequencies


@pytest.mark.slow
def test_fsmt_frequencies_10000_to_the_2i_over_d_minus_2_are_caught(fsmt_variants):
    """log(10000) / (half_dim - 1) (modeling_fsmt.py:1083): frequencies 10000^(-2i/(d_model - 2))."""
    report = fsmt_variants["frequencies"]
    assert failed(report) >= FREQUENCY_CHECKS | PUBLISHED_PE | {"encode_matches_reference"}
    assert "pe_position_0_is_sin_0_and_cos_0" not in failed(report)


@pytest.mark.slow
def test_fsmt_frequencies_are_named(fsmt_variants):
    cause = causes(fsmt_variants["frequencies"])["pe_wavelengths_are_geometric_for_any_d_model"]
    assert cause is not None and "(mutant:pe_frequencies_over_d_minus_2)" in cause, cause


@pytest.mark.slow
def test_fsmt_zero_encoding_at_padded_positions_fails_the_model_checks(fsmt_variants):
    """The padding row of the table is zeroed and padding tokens take position padding_idx (modeling_fsmt.py:1090-1091,
    1105-1106): padded positions get no encoding. Only padded rows differ, so only the model-level checks see it."""
    report = fsmt_variants["padding_rows_zero"]
    assert failed(report) == {"encode_matches_reference", "decode_matches_reference", "logits_match_reference",
                              "logits_match_reference_at_base_size", "trained_checkpoint_outputs_match_golden",
                              "trained_checkpoint_matches_reference_on_fresh_inputs"}
    assert not failed(report) & (PE_CHECKS | PUBLISHED_PE)


@pytest.mark.slow
def test_fsmt_zero_encoding_at_padded_positions_is_named(fsmt_variants):
    cause = causes(fsmt_variants["padding_rows_zero"])["encode_matches_reference"]
    assert cause is not None and "(mutant:pe_zero_at_padding)" in cause, cause


@pytest.mark.slow
def test_fsmt_trainable_sinusoid_tables_are_named_learned_positions(fsmt, tmp_path, monkeypatch):
    """FSMT's sinusoid tables are trainable nn.Parameters (modeling_fsmt.py:1063-1064, 220-224). The built-in makes
    them buffers (load_weights would zero them); left as parameters, the suite counts and names them."""
    from conformance.implementations.thirdparty import hf_fsmt

    monkeypatch.setattr(hf_fsmt, "freeze_as_buffers", lambda net: net)
    report = certify_quietly(tmp_path, "hf-fsmt", "--no-training", "-k", "parameter")
    by_id = {c["id"]: c for c in report["checks"]}
    beyond = by_id["model_has_no_parameters_beyond_the_paper"]
    assert beyond["status"] == "failed" and "embed_positions" in beyond["message"]
    count = by_id["parameter_count_matches_published_value[fact_id=params.total]"]
    assert count["status"] == "failed" and "learned positions" in count["message"]


# -- opennmt-py: pre-norm layers, a final LayerNorm per stack, an output bias, a short encoder mask ---------------


# Counted at the eps its layers are built with (declared per part): every count is off by the same terms.
ONMT_COUNTS = {"parameter_count_matches_formula_for_any_config", "parameter_count_without_attention_biases",
               *(f"parameter_count_matches_published_value[fact_id={fact}]"
                 for fact in ("params.total", "params.total_separate_output", "toy.parameters", "german.total"))}


@pytest.mark.slow
def test_opennmt_fails_the_layers_the_model_the_count_and_one_invariance(reports):
    assert failed(reports["opennmt-py"]) == {
        "encoder_layer_matches_reference", "encoder_layer_matches_reference_at_base_size",
        "decoder_layer_matches_reference", "decoder_layer_matches_reference_at_base_size",
        "encode_matches_reference", "decode_matches_reference", "logits_match_reference",
        "logits_match_reference_at_base_size", "appending_source_padding_leaves_logits_unchanged",
        # its encoder mask is max(length) keys wide: a row beside trailing padding reads it (every row has some)
        "batch_equals_rows_run_one_at_a_time",
        "model_has_no_parameters_beyond_the_paper", "published_parameter_counts", *ONMT_COUNTS}


@pytest.mark.slow
def test_opennmt_pre_norm_is_named_on_the_layers(reports):
    """x + Sublayer(LayerNorm(x)) (encoders/transformer.py:54-58, modules/position_ffn.py:49-51,
    decoders/transformer.py:260, 268)."""
    layers = {f"{stack}_layer_matches_reference{size}" for stack in ("encoder", "decoder")
              for size in ("", "_at_base_size")}
    assert named(reports["opennmt-py"], layers, "pre_norm") == layers


@pytest.mark.slow
def test_opennmt_model_divergence_is_localised_to_the_first_layer(reports):
    messages = {c["id"]: c["message"] for c in reports["opennmt-py"]["checks"]}
    assert "first divergence: encoder.0" in messages["encode_matches_reference"]
    assert "first divergence: decoder.0" in messages["decode_matches_reference"]


@pytest.mark.slow
def test_opennmt_pre_norm_and_final_norms_are_named_together_on_the_model(reports):
    """Two deviations at once (encoders/transformer.py: pre-norm layers, and a LayerNorm after the stack): no
    single known bug matches the memory; their combination does, confirmed on a second problem."""
    cause = causes(reports["opennmt-py"])["encode_matches_reference"] or ""
    assert "(mutant:extra_final_layer_norm + mutant:pre_norm)" in cause, cause


@pytest.mark.slow
def test_opennmt_final_norms_and_output_bias_are_listed_and_counted(reports):
    """encoders/transformer.py:134 and decoders/transformer.py:480 (a final LayerNorm per stack), model_builder.py:249
    (the generator nn.Linear has a bias)."""
    by_id = {c["id"]: c for c in reports["opennmt-py"]["checks"]}
    beyond = by_id["model_has_no_parameters_beyond_the_paper"]["message"]
    assert all(p in beyond for p in ("encoder.layer_norm.weight", "decoder.layer_norm.weight", "generator.bias"))
    for check in ONMT_COUNTS:
        count = by_id[check]["message"]
        assert "output bias" in count and "extra LayerNorm (a final one after a stack" in count, (check, count)


@pytest.fixture(scope="module")
def onmt_full_width_mask(tmp_path_factory):
    """opennmt-py with the encoder's mask as wide as the source: sequence_mask(src_len, S), not (src_len)."""
    encoder = pytest.importorskip("onmt.encoders.transformer")
    from onmt.utils.misc import sequence_mask

    from conformance.implementations.thirdparty import onmt_py

    width, original = {}, onmt_py.adapter.model_options["encode"]

    def encode(m, src):
        width["S"] = src.shape[1]
        return original(m, src)

    def full_width(lengths, max_len=None):
        return sequence_mask(lengths, max_len or width["S"])

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(onmt_py.adapter.model_options, "encode", encode)
        patch.setattr(encoder, "sequence_mask", full_width)
        return certify_quietly(tmp_path_factory.mktemp("onmt_mask"), "opennmt-py", "--no-training", "-k", "padding")


@pytest.mark.slow
def test_opennmt_encoder_mask_as_wide_as_the_longest_sentence_is_caught(reports, onmt_full_width_mask):
    """encoders/transformer.py:126: sequence_mask(src_len) is max(src_len) wide, not the source's width: padded past
    its longest sentence, a source of one-token sentences broadcasts the mask over every key (the padding is
    attended); any other narrower mask raises in masked_fill."""
    assert "appending_source_padding_leaves_logits_unchanged" in failed(reports["opennmt-py"])
    assert "appending_source_padding_leaves_logits_unchanged" not in failed(onmt_full_width_mask)


@pytest.mark.slow
def test_opennmt_encoder_mask_width_is_named(reports):
    """The invariance's logits carry rows 1, 2 and 4 at once: the pre-norm + final-norm pair confirmed on the
    encoder's output leads the search (the candidate's deviation profile), extended by the mask bug."""
    cause = causes(reports["opennmt-py"])["appending_source_padding_leaves_logits_unchanged"]
    assert cause is not None and "mutant:encoder_mask_narrower_than_source" in cause, cause
