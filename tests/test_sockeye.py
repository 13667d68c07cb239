"""The built-in ``sockeye``: what the suite says about Sockeye 3's Transformer (docs/third-party.md, its section).

Each deviation established by reading Sockeye's source is asserted as the check(s) that catch it and, where the suite
names it, by that name; a deviation caught but not named has an ``xfail(strict=True)`` test asserting a name. Sockeye
cannot be an extra (it declares torch<1.14 and numpy<2): without it (``pip install --no-deps -r
requirements-sockeye.txt``) this module is skipped.
"""

from __future__ import annotations

import re
import sys

import pytest

pytest.importorskip("sockeye")

from conftest import certify_quietly  # noqa: E402 - after the skip: nothing here runs without sockeye

from conformance.boundary.loading import LoadError, import_target  # noqa: E402

# Sockeye compiles its attention helpers and its sinusoid table with torch.jit.script when its modules load.
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
FIX = "pip install --no-deps -r requirements-sockeye.txt"
PE_CHECKS = {"pe_matches_published_values", "pe_position_0_is_sin_0_and_cos_0", "pe_matches_formula_for_any_size",
             "pe_wavelengths_match_published_values[d_model=64]", "pe_wavelengths_match_published_values[d_model=512]",
             "pe_wavelengths_are_geometric_for_any_d_model", "pe_shift_is_published_rotation",
             "pe_shift_by_k_is_a_rotation"}
PUBLISHED_PE = {"published_positional_encoding_values", "published_wavelengths", "published_rotation_pairs"}
DECODER_OUTPUTS = {"decode_matches_reference", "logits_match_reference", "logits_match_reference_at_base_size"}
COUNTS = {"parameter_count_without_attention_biases", "parameter_count_matches_formula_for_any_config"}
ONLY_PADDED_ROWS = "only the outputs at padded positions differ from the paper's (every real position is the paper's)"
TARGET_MASK_TERM_LEFT_OUT = "decoder_layer: the term tgt_mask[:, None, :] left out"
DECODER_CHECKS = ("-k", "decode_matches or logits_match")


def failed(report: dict) -> set[str]:
    return {c["id"] for c in report["checks"] if c["status"] == "failed"}


def by_id(report: dict) -> dict[str, dict]:
    return {c["id"]: c for c in report["checks"]}


def cause(report: dict, check: str) -> str:
    return by_id(report)[check]["likely_cause"] or ""


# --------------------------------------------------------------------------------------------------
# Without the package: the built-in says how to install it
# --------------------------------------------------------------------------------------------------


def hide_sockeye(monkeypatch) -> None:
    monkeypatch.delitem(sys.modules, "conformance.implementations.thirdparty.sockeye", raising=False)
    for module in [m for m in sys.modules if m.startswith("sockeye.")]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.setitem(sys.modules, "sockeye", None)  # import sockeye -> ModuleNotFoundError


def test_a_missing_sockeye_names_the_no_deps_install(monkeypatch):
    hide_sockeye(monkeypatch)
    with pytest.raises(LoadError, match=re.escape(f"not installed. Fix: {FIX}")):
        import_target("sockeye")


def test_certify_without_sockeye_exits_2_with_the_fix(certify, monkeypatch):
    hide_sockeye(monkeypatch)
    run = certify("sockeye", "--no-training", "-k", "pe_position_0")
    assert run.code == 2 and FIX in run.err + run.out, run.err


# --------------------------------------------------------------------------------------------------
# With the package: the certify run and each deviation
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return certify_quietly(tmp_path_factory.mktemp("sockeye"), "sockeye", "--no-training")


def interleaved_table(length: int, depth: int):
    """Sockeye's get_positional_embeddings (layers.py:682-698) with sin and cos interleaved, as §3.5 writes them."""
    import torch

    angle = torch.arange(length)[:, None] / torch.pow(10000, 2 * torch.arange(depth // 2)[None] / depth)
    return torch.stack([torch.sin(angle), torch.cos(angle)], -1).reshape(length, depth)


@pytest.fixture(scope="module")
def paper_table(tmp_path_factory):
    """The decoder's checks with deviation 1 undone: what is left is the decoder's self-attention mask."""
    from sockeye import layers

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(layers, "get_positional_embeddings", interleaved_table)
        return certify_quietly(tmp_path_factory.mktemp("paper_table"), "sockeye", "--no-training", *DECODER_CHECKS)


@pytest.fixture(scope="module")
def paper_table_and_target_mask(tmp_path_factory):
    """As ``paper_table``, with the decoder's self-attention also hiding the target's padding keys."""
    import torch
    from sockeye import layers, transformer

    from conformance.implementations.thirdparty import sockeye as built_in

    seen, original = {}, built_in.adapter.model_options["decode"]

    def decode(m, tgt_in, memory, src):
        seen["keep"], seen["heads"] = tgt_in != m.pad_id, m.model.config.config_decoder.attention_heads
        return original(m, tgt_in, memory, src)

    def causal_and_padding(mask, x):
        T = x.shape[1]
        blocked = torch.ones(T, T, dtype=torch.bool).triu(1)[None] | ~seen["keep"][:, None, :]
        return blocked.repeat_interleave(seen["heads"], dim=0)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(layers, "get_positional_embeddings", interleaved_table)
        patch.setitem(built_in.adapter.model_options, "decode", decode)
        patch.setattr(transformer.AutoRegressiveMask, "forward", causal_and_padding)
        return certify_quietly(tmp_path_factory.mktemp("target_mask"), "sockeye", "--no-training", *DECODER_CHECKS)


@pytest.mark.slow
def test_sockeye_fails_the_positional_checks_the_decoder_outputs_and_the_counts(report):
    assert failed(report) == PE_CHECKS | PUBLISHED_PE | DECODER_OUTPUTS | COUNTS | {
        "encode_matches_reference", "model_has_no_parameters_beyond_the_paper", "published_embedded_inputs"}


@pytest.mark.slow
def test_post_norm_layers_attention_and_ffn_pass(report):
    """With ``--transformer-preprocess '' --transformer-postprocess drn`` its blocks are the paper's."""
    passed = {cid for cid, c in by_id(report).items() if c["status"] == "passed"}
    assert passed >= {f"{part}{size}" for part in ("encoder_layer_matches_reference", "decoder_layer_matches_reference",
                                                  "feed_forward_matches_reference") for size in ("", "_at_base_size")}
    assert passed >= {"self_attention_matches_reference", "cross_attention_matches_reference",
                      "multi_head_attention_matches_reference_at_base_size"}


@pytest.mark.slow
def test_its_schedule_and_smoothed_loss_pass(report):
    """inv-sqrt-decay at base rate d_model^-0.5 is §5.3's; the 'mxnet' smoothing spreads epsilon over all V tokens."""
    own = {cid: c["status"] for cid, c in by_id(report).items()
           if cid.startswith(("lrate_", "smoothed_", "published_learning_rates", "published_label_smoothing"))}
    assert len(own) == 10 and set(own.values()) == {"passed"}, own


# -- 1: sines then cosines (layers.py:682-698) --------------------------------------------------------------


@pytest.mark.slow
def test_sines_then_cosines_are_named_on_the_part_and_the_encoder(report):
    for check in PE_CHECKS | {"encode_matches_reference"}:
        assert cause(report, check).endswith("(mutant:pe_halves_concatenated)"), (check, cause(report, check))


# -- 2: an output bias (layers.py:84) -----------------------------------------------------------------------


@pytest.mark.slow
def test_the_output_bias_is_listed_and_counted(report):
    checks = by_id(report)
    assert "model.output_layer.bias" in checks["model_has_no_parameters_beyond_the_paper"]["message"]
    for check in COUNTS:
        assert cause(report, check).endswith("(mutant:parameter_count_output_bias)"), (check, cause(report, check))


# -- 3: the decoder's self-attention hides no target padding (decoder.py:264-265) -----------------------------


@pytest.mark.slow
def test_unmasked_target_padding_changes_only_padded_rows(paper_table):
    """With the paper's table, the decoder's outputs still differ, at padded target positions only: each message
    says so, or names the formula the generated neighbourhood confirms (the target's padding term left out of the
    decoder's self-attention mask), on at least one check."""
    assert failed(paper_table) == DECODER_OUTPUTS
    messages = {check: by_id(paper_table)[check]["message"] for check in DECODER_OUTPUTS}
    for check, message in messages.items():
        assert ONLY_PADDED_ROWS in message or TARGET_MASK_TERM_LEFT_OUT in message, (check, message)
    assert any(TARGET_MASK_TERM_LEFT_OUT in message for message in messages.values()), messages


@pytest.mark.slow
def test_hiding_the_target_padding_keys_passes_the_decoder_checks(paper_table_and_target_mask):
    assert {check: by_id(paper_table_and_target_mask)[check]["status"] for check in DECODER_OUTPUTS} == dict.fromkeys(
        DECODER_OUTPUTS, "passed")


@pytest.mark.slow
def test_unmasked_target_padding_is_described(paper_table):
    """No known bug of the catalogue hides only the target's padding keys wrongly (padding_mask_ignored also unmasks
    the source): the oracle's neighbourhood states it, the decoder's self-attention mask without its padding term,
    beside the one other neighbour that answers alike on every problem asked."""
    text = cause(paper_table, "decode_matches_reference")
    assert text.startswith("measured: equally"), text
    assert "the term tgt_mask[:, None, :] left out: computes self_mask = ⟦future[None]⟧" in text, text


# -- 4: a finite fill, -99999999 (layers.py:311); 5: tables of max_seq_len rows (layers.py:729-735, 753) -------


@pytest.mark.slow
def test_a_fully_masked_row_is_uniform_an_advisory_named_on_the_attention(report):
    check = by_id(report)["fully_masked_row_gives_zero_weights_and_only_b_O"]
    assert check["status"] == "advisory"
    assert check["likely_cause"].endswith("(mutant:masked_scores_filled_with_minus_1e9)"), check["likely_cause"]


@pytest.mark.slow
def test_an_all_padding_source_is_named_with_the_table(report):
    check = by_id(report)["fully_masked_source_sentence_is_invisible_to_the_decoder"]
    assert check["status"] == "advisory"
    assert check["likely_cause"].endswith(
        "(mutant:masked_scores_filled_with_minus_1e9 + mutant:pe_halves_concatenated)"), check["likely_cause"]


@pytest.mark.slow
def test_a_source_past_the_table_is_refused_an_advisory(report):
    check = by_id(report)["source_longer_than_1024_tokens_is_encoded"]
    assert check["status"] == "advisory" and "positional table of fixed length" in check["message"], check["message"]


@pytest.mark.slow
def test_what_the_code_fixes_is_skipped_and_the_rest_is_supplied(report):
    statuses = {cid: c["status"] for cid, c in by_id(report).items()}
    assert statuses["published_parameter_counts"] == "not_implemented"  # counted with attention biases
    assert statuses["greedy_decoding_picks_the_argmax_at_every_step"] == "supplied"
