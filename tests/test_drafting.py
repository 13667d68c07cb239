"""``template --from`` on public-style models (tests/drafting/): what each draft claims is what the model does, a TODO
stands where only a person can decide, and the finished adapters (tests/drafting/finishing.py: each draft with the
answers a user gives its TODOs, built from today's draft) certify.

The models: (a) one config dataclass with a field no key names, and a factory function; (b) a composition constructor
``Seq2Seq(encoder, decoder, src_pad_idx, trg_pad_idx, device)``; (c) an output matrix of its own; (d) attention without
biases beside a biased FFN; (e) one joint vocabulary and one table, the output tied to it by assignment; and two
constructors with an argument no key names (blocked_model.py); (f) attention projections in a list under their module;
(g) an FFN inner size hard-wired to 4 d_model; (h) the width under two names (d_word_vec, d_model); (i) stacks
that default to None, and keyword-only; (j) a module without vocabulary tables; (k) a module that imports a package
this environment lacks; (l) sequence-first ids and activations; (m) constructor switches that tie the tables;
(n) a decoder that shifts its targets itself; (o) arguments annotated nn.Module itself.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from drafting.finishing import CASES, finished  # noqa: E402

from conformance.adapters.draft import draft  # noqa: E402
from conformance.boundary.loading import import_target  # noqa: E402
from conformance.cli import EXIT_NOTHING_RAN, main  # noqa: E402
from conformance.config import ModelConfig, toy_config  # noqa: E402
from conformance.errors import LoadError  # noqa: E402
from conformance.weights import model_shapes, random_weights  # noqa: E402

DRAFTING = Path(__file__).parent / "drafting"


@pytest.fixture(autouse=True)
def drafting_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(DRAFTING))


def drafted(module: str, name: str) -> str:
    return draft(f"{DRAFTING / module}.py:{name}")


def supports_of(text: str) -> dict:
    """The draft's ``supports={...}`` as a dict."""
    found = re.search(r"supports=(\{.*?\}),\n", text, re.S).group(1)
    return eval(found, {})  # noqa: S307 - the suite's own draft: literals only


def reasons_of(text: str) -> dict:
    return eval(re.search(r"reasons=(\{.*?\})\)", text, re.S).group(1), {})  # noqa: S307 - as above


def names_of(text: str) -> dict:
    return eval(re.search(r"^NAMES = (\{.*?^\})", text, re.S | re.M).group(1), {})  # noqa: S307 - as above


def todos(text: str) -> list[str]:
    """Every TODO comment, its wrapped lines (``#`` and four spaces or more) joined."""
    found: list[str] = []
    in_todo = False
    for line in text.splitlines():
        if re.match(r"\s*#\s*TODO", line):
            found.append(line.strip().lstrip("# "))
            in_todo = True
        elif in_todo and re.match(r"\s*#\s{4,}\S", line):
            found[-1] += " " + line.strip().lstrip("# ")
        else:
            in_todo = False
    return found


def load(text: str, tmp_path: Path, name: str = "drafted_adapter.py"):
    (tmp_path / name).write_text(text)
    return import_target(str(tmp_path / name))


def load_random_weights(adapter, config: ModelConfig):
    model = adapter.build_model(config.as_dict(), 0)
    weights = random_weights(model_shapes(config), np.random.default_rng(0))
    model.load_weights(weights)
    return model, weights


# -- (a) a config dataclass, and a factory function ----------------------------------------------------------------


def test_a_config_dataclass_with_a_field_no_key_names_is_built_with_that_field_to_check(tmp_path):
    text = drafted("config_model", "ConfiguredTransformer")
    assert "model_config = TranslationConfig(src_vocab_size=c.src_vocab, tgt_vocab_size=c.tgt_vocab, max_len=1024," \
           in text and "return ConfiguredTransformer(model_config)" in text
    assert todos(text) == ["TODO TranslationConfig(max_len): no config key has this name; 1024 is assumed, the"
                           " longest sequence it accepts (the suite's are shorter)"], todos(text)
    assert "NotImplementedError" not in text  # nothing blocks building
    assert {k: names_of(text)[k] for k in ("E_src", "E_tgt", "W_out")} == {
        "E_src": "src_embed.weight", "E_tgt": "tgt_embed.weight", "W_out": "generator.weight"}
    assert supports_of(text)["share_embeddings"] == (False,) and supports_of(text)["tie_output"] == (False,)
    config = ModelConfig(src_vocab=11, tgt_vocab=13, d_model=8, h=2, d_ff=12, N=1, share_embeddings=False,
                         tie_output=False)
    model, weights = load_random_weights(load(text, tmp_path), config)
    np.testing.assert_array_equal(model.dump_weights()["W_out"], weights["W_out"])


def test_a_factory_function_is_drafted_like_a_class():
    text = drafted("config_model", "make_model")
    assert "lambda c: make_model(src_vocab=c.src_vocab, tgt_vocab=c.tgt_vocab, N=c.N, d_model=c.d_model," in text
    assert names_of(text)["W_out"] == "generator.weight" and todos(text) == []


# -- (b) a composition constructor ---------------------------------------------------------------------------------


def test_a_composition_constructor_builds_its_modules_first_from_their_own_sizes(tmp_path):
    text = drafted("seq2seq_model", "Seq2Seq")
    assert re.search(r"    encoder = Encoder\(input_dim=c.src_vocab, hid_dim=c.d_model, n_layers=c.N, n_heads=c.h,"
                     r" pf_dim=c.d_ff,\n\s+dropout=c.dropout, device=\"cpu\"\)", text), text
    assert "    decoder = Decoder(output_dim=c.tgt_vocab, hid_dim=c.d_model" in text
    assert '    return Seq2Seq(encoder, decoder, src_pad_idx=c.pad_id, trg_pad_idx=c.pad_id, device="cpu")' in text
    assert names_of(text)["W_out"] == "decoder.fc_out.weight"
    assert supports_of(text)["tie_output"] == (False,)
    # no encode/decode methods: functions that raise NotImplementedError with their TODO, until a person writes them
    assert "TODO Seq2Seq has no encode(src)" in text and "TODO Seq2Seq has no decode(tgt_in, memory, src)" in text
    config = ModelConfig(src_vocab=11, tgt_vocab=13, d_model=8, h=2, d_ff=12, N=1, share_embeddings=False,
                         tie_output=False)
    model, _ = load_random_weights(load(text, tmp_path), config)
    with pytest.raises(NotImplementedError, match="TODO Seq2Seq has no encode"):
        model.forward(np.array([[3, 4, 0]]), np.array([[1, 5, 6]]))
    unannotated = drafted("seq2seq_model", "UnannotatedSeq2Seq")
    assert "    encoder = Encoder(" in unannotated and "TODO UnannotatedSeq2Seq(encoder) has no annotation: built as" \
        " Encoder, the class of that name in seq2seq_model; check it is the one" in todos(unannotated)


def test_a_todo_that_blocks_building_raises_it_when_the_model_is_built(tmp_path):
    """The draft imports; building the model raises NotImplementedError with the TODO, which certify reports as the
    reason the model's checks are not implemented; the name map was read off a model built with None for it."""
    text = drafted("blocked_model", "NeedsTokenizer")
    todo = ("TODO NeedsTokenizer(tokenizer): no config key has this name, and no annotation or class of that name says"
            " what to build: give its value in module(c)")
    assert todo in todos(text) and names_of(text)["E"] == "embedding.weight"
    adapter = load(text, tmp_path)
    with pytest.raises(NotImplementedError, match=re.escape(todo)):
        adapter.build_model(toy_config().as_dict(), 0)
    assert main(["certify", str(tmp_path / "drafted_adapter.py"), "--no-training", "--no-isolate", "--progress", "off",
                 "-k", "logits_match_reference and not base", "--json", str(tmp_path / "r.json")]) == EXIT_NOTHING_RAN
    report = json.loads((tmp_path / "r.json").read_text())
    assert [c["status"] for c in report["checks"]] == ["not_implemented"] and todo in json.dumps(report)


def test_a_class_that_cannot_be_built_gets_the_skeleton_and_says_so_at_the_top(tmp_path):
    text = drafted("blocked_model", "NeedsSpecialTokens")
    top = text.split('"""')[1]
    assert "NeedsSpecialTokens could not be built from the suite's sizes" in " ".join(top.split())
    assert "NAMES = {}" in text and "def module(c):" in text and "special_tokens=None" in text
    with pytest.raises(NotImplementedError, match="NeedsSpecialTokens.special_tokens."):
        load(text, tmp_path).build_model(toy_config().as_dict(), 0)


# -- (c), (d), (e): what the draft declares is what the model does -------------------------------------------------


def test_an_output_matrix_of_its_own_is_w_out_and_never_declared_tied():
    text = drafted("untied_model", "UntiedTransformer")
    assert {k: names_of(text).get(k) for k in ("E_src", "E_tgt", "W_out")} == {
        "E_src": "src_tok.weight", "E_tgt": "tgt_tok.weight", "W_out": "to_logits.weight"}
    assert supports_of(text)["tie_output"] == (False,) and "No canonical name" not in text and todos(text) == []


def test_attention_bias_is_read_off_the_attention_projections_not_the_ffn():
    text = drafted("bias_free_model", "BiasFreeTransformer")
    assert supports_of(text)["attention_bias"] == (False,)
    assert '"attention_bias": "the attention projections never carry biases"' in text


def test_one_table_for_both_sides_tied_by_assignment_is_e():
    for name in ("JointVocabTransformer", "StrictJointTransformer"):  # the second refuses two vocabulary sizes
        text = drafted("one_table_model", name)
        assert names_of(text) == {**names_of(text), "E": "shared.weight"} and "E_src" not in names_of(text), name
        assert supports_of(text)["share_embeddings"] == supports_of(text)["tie_output"] == (True,), name


# -- the finished adapters certify ---------------------------------------------------------------------------------

# Checks that load the weights of their own configuration whatever the adapter declares (supports share_embeddings,
# tie_output or attention_bias of a single value): an error of the check, in load_weights, not of the adapter.
CHECKS_IGNORING_DECLARATIONS = {"greedy_decoding_picks_the_argmax_at_every_step",
                                "greedy_decoding_stops_at_the_end_token_then_pads",
                                "changing_an_unused_embedding_row_changes_only_its_logit"}
MODEL_CHECKS = ("logits_match_reference or decode_matches_reference or encode_matches_reference"
                " or model_has_no_parameters_beyond_the_paper or parameter_count_matches_formula")


def declarations(name: str) -> tuple[dict, dict]:
    """(supports, reasons) a finished adapter declares, as its draft read them off the model: LayerNorms of a fixed
    eps everywhere, attention biases everywhere but in bias_free, one table in bias_free and one_table."""
    biased, one = name != "bias_free", name in ("bias_free", "one_table")
    supports = {"eps": (1e-05,), "attention_bias": (biased,), "share_embeddings": (one,), "tie_output": (one,)}
    tables = (dict.fromkeys(("share_embeddings", "tie_output"), "one vocabulary and one table") if one else
              {"share_embeddings": "separate source and target tables",
               "tie_output": "the output projection is a matrix of its own"})
    return supports, {"eps": "the LayerNorms' eps is fixed in the implementation",
                      "attention_bias": f"the attention projections {'always' if biased else 'never'} carry biases",
                      **tables}


def section(text: str, opening: str) -> str:
    start = text.index(opening)
    return text[start: text.index("}", start) + 1]


def certify(finished_text: str, tmp_path: Path, *options: str) -> dict[str, dict]:
    (tmp_path / "finished_adapter.py").write_text(finished_text)
    code = main(["certify", str(tmp_path / "finished_adapter.py"), "--no-training", "--no-isolate", "--progress", "off",
                 "--json", str(tmp_path / "report.json"), *options])
    assert code in (0, 1)
    return {check["id"]: check for check in json.loads((tmp_path / "report.json").read_text())["checks"]}


@pytest.mark.parametrize("name", list(CASES))
def test_the_finished_adapter_is_the_draft_with_its_todos_resolved_and_its_model_checks_pass(name, tmp_path):
    case = CASES[name]
    text = drafted(case.module, case.name)
    done = finished(case, text)  # raises where the draft no longer takes the case's answers
    assert todos(done) == [] and "NotImplementedError" not in done, done
    for opening in ("NAMES = {", "supports={", "reasons={"):
        assert section(text, opening) == section(done, opening), (name, opening)
    assert (supports_of(done), reasons_of(done)) == declarations(name)
    found = certify(done, tmp_path, "-k", MODEL_CHECKS)
    assert {check: c["status"] for check, c in found.items()} == dict.fromkeys(found, "passed")
    assert "logits_match_reference" in found and "model_has_no_parameters_beyond_the_paper" in found


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_the_finished_adapter_passes_every_check_it_runs(name, tmp_path):
    found = certify(finished(CASES[name]), tmp_path)
    statuses = {check: c["status"] for check, c in found.items()}
    assert not [check for check, status in statuses.items() if status == "failed"], statuses
    errors = {check for check, status in statuses.items() if status == "error"}
    assert errors <= CHECKS_IGNORING_DECLARATIONS, errors
    for check in errors:
        assert re.search(r"canonical weights do not match the config|KeyError: 'E'", found[check]["message"]), check
    assert sum(status == "passed" for status in statuses.values()) >= 17


# -- (f) attention modules the name map cannot derive ------------------------------------------------------------------


def test_attention_modules_the_map_cannot_derive_are_listed_where_the_helper_takes_them(tmp_path):
    """The Annotated Transformer's projections sit in a list under their attention module: the draft lists the
    attention modules as TorchModel's option (``model={"attention": ATTENTION}``), and the draft loads; a bare
    ``attention=`` keyword is refused with the fix."""
    text = drafted("nested_projections_model", "NestedProjectionsTransformer")
    assert 'model={"attention": ATTENTION},' in text and "\n    attention=ATTENTION" not in text, text
    adapter = load(text, tmp_path)
    assert adapter.model_options["attention"]["*.{l}.self_attn"] == "*.{l}.self_attn"
    with pytest.raises(LoadError, match=r"raised TypeError: TorchAdapter: attention is an option of its models, not"
                                        r" a part. Fix: pass model=\{'attention': \.\.\.\}"):
        load(text.replace('    model={"attention": ATTENTION},\n', "    attention=ATTENTION,\n"), tmp_path, "bare.py")


# -- (g) an inner size the constructor does not take ---------------------------------------------------------------


def test_an_ffn_hard_wired_to_4_d_model_is_mapped_and_declared(tmp_path):
    """The constructor takes no d_ff: the probe reads the FFN's inner size off the built module (4 d_model), maps its
    matrices, and declares d_ff_ratio (4,), so every check asks what it can build; the model's checks pass."""
    text = drafted("fixed_ffn_model", "FixedFFNTransformer")
    assert supports_of(text)["d_ff_ratio"] == (4,), text
    assert reasons_of(text)["d_ff_ratio"] == "the feed-forward network's inner size is fixed at 4 d_model in the" \
                                            " implementation"
    assert names_of(text)["*.{l}.ffn.W1"] == "*.{l}.feed_forward.fc1.weight" and "fc1" not in text.split("NAMES")[0]
    assert "#   encoder.0.feed_forward" not in text, text
    found = certify(text, tmp_path, "-k", MODEL_CHECKS)
    assert "logits_match_reference" in found
    assert {check: c["status"] for check, c in found.items()} == dict.fromkeys(found, "passed")


# -- (h) the width under two names ---------------------------------------------------------------------------------


def test_a_width_under_two_names_is_given_to_both_and_a_linear_named_like_a_table_is_an_output(tmp_path):
    """d_word_vec and d_model both take the model's width (the constructor asserts them equal: a draft that gave
    d_model only to the first could not build, and fell back to an empty skeleton); ``trg_word_prj``, an nn.Linear
    whose name has "word" in it, is the output matrix of its own, not a second target table."""
    text = drafted("word_vec_model", "WordVecTransformer")
    assert "d_word_vec=c.d_model, d_model=c.d_model" in text, text
    assert names_of(text)["W_out"] == "trg_word_prj.weight" and todos(text) == [], text
    assert supports_of(text)["tie_output"] == (False,)
    found = certify(text, tmp_path, "-k", MODEL_CHECKS)
    assert "logits_match_reference" in found
    assert {check: c["status"] for check, c in found.items()} == dict.fromkeys(found, "passed")


# -- (i) stacks that default to None ----------------------------------------------------------------------------------


def test_stacks_that_default_to_none_are_built_not_read_as_absent():
    """``encoder=None, decoder=None``: built as the composition constructor's are (the classes of those names), so
    the draft reads the model's real tables and declares the tying they have (two tables, an output matrix of its
    own), never one read off a model without its stacks."""
    text = drafted("optional_stacks_model", "OptionalSeq2Seq")
    assert "    encoder = Encoder(input_dim=c.src_vocab, hid_dim=c.d_model" in text, text
    assert "return OptionalSeq2Seq(encoder, decoder," in text, text
    assert names_of(text)["W_out"] == "decoder.fc_out.weight"
    assert supports_of(text)["share_embeddings"] == (False,) and supports_of(text)["tie_output"] == (False,)


def test_a_model_without_tables_declares_nothing_about_tying():
    """No vocabulary table in the built module: the draft declares neither share_embeddings nor tie_output (it
    read nothing they could rest on) and says the table is to be mapped by hand."""
    text = drafted("tableless_model", "Tableless")
    declared = supports_of(text) if "supports={" in text else {}
    assert "share_embeddings" not in declared and "tie_output" not in declared, text
    assert "TODO no embedding table found: map E by hand" in text, text


def test_a_check_without_the_models_greedy_loop_names_the_line_that_supplies_it(tmp_path):
    """A draft that leaves supplied= commented out: the greedy checks are not implemented, and the report names the
    one line that would run the suite's loop over its decode (never credited)."""
    text = drafted("nested_projections_model", "NestedProjectionsTransformer")
    found = certify(text, tmp_path, "-k", "greedy_decoding_picks or logits_match_reference_at")
    check = found["greedy_decoding_picks_the_argmax_at_every_step"]
    assert check["status"] == "not_implemented"
    assert check["message"].endswith("does not provide model.greedy_decode. To run the lesson's greedy loop over your"
                                     " decode instead (reported as the suite's, never credited to your code):"
                                     ' supplied=("greedy_decode",) in TorchAdapter(...)'), check["message"]


def test_keyword_only_stacks_are_passed_by_name():
    """``KeywordOnlySeq2Seq(src_pad_idx, *, encoder, decoder, ...)``: the stacks are passed by name after the size
    (the draft compiles; positional after keyword would not)."""
    text = drafted("optional_stacks_model", "KeywordOnlySeq2Seq")
    compile(text, "draft.py", "exec")
    assert "KeywordOnlySeq2Seq(src_pad_idx=c.pad_id, encoder=encoder, decoder=decoder" in text, text


def test_a_package_the_module_imports_is_named_as_missing_not_the_module(capsys, monkeypatch):
    monkeypatch.chdir(DRAFTING)
    assert main(["template", "--from", "needs_missing_package:NeedsMissing"]) == 2
    err = capsys.readouterr().err
    assert "importing it needs 'a_package_nobody_installed', which is not installed here" in err, err
    assert "Fix: install it (pip install a_package_nobody_installed)" in err and "run from the folder" not in err, err


# -- (l) sequence first ------------------------------------------------------------------------------------------------


def test_the_layout_is_told_by_what_encode_does(tmp_path):
    """One token of sentence 0 changed: a sequence-first encoder moves only column 0 of its output, so the draft
    declares batch_first=False, and the model's checks pass; a batch-first one keeps batch_first=True."""
    text = drafted("sequence_first_model", "SequenceFirstTransformer")
    assert 'mask="keep", batch_first=False, framework="torch",' in text, text
    found = certify(text, tmp_path, "-k", MODEL_CHECKS)
    assert "logits_match_reference" in found
    assert {check: c["status"] for check, c in found.items()} == dict.fromkeys(found, "passed")
    assert 'batch_first=True, framework="torch",' in drafted("bias_free_model", "BiasFreeTransformer")


# -- (j) the number of heads fixed in the code ----------------------------------------------------------------------


def test_a_head_count_no_argument_takes_is_read_off_the_modules_declared_and_certified(tmp_path):
    """Nothing in the parameters tells the number of heads: a constructor that takes none fixes it. The draft reads the
    count the built attention modules hold, declares supports h (8,), says so in a TODO, and the model checks pass in
    the configurations fitted to it (they compared h = 8 with the suite's h, and failed, before)."""
    text = drafted("fixed_heads_model", "FixedHeadsTransformer")
    assert supports_of(text)["h"] == (8,), text
    assert reasons_of(text)["h"] == "the attention modules are built with 8 heads, whatever the config"
    found = certify(text, tmp_path, "-k", MODEL_CHECKS)
    assert "logits_match_reference" in found
    assert {check: c["status"] for check, c in found.items()} == dict.fromkeys(found, "passed")
    guesses = text.split("# Check these guesses:")[1].split("\n\n")[0]
    assert "no argument of FixedHeadsTransformer takes the number of heads (c.h)" in " ".join(
        line.strip("# ").strip() for line in guesses.splitlines()), text
    assert "the number of layers" not in guesses
    assert "number of heads" not in drafted("fixed_ffn_model", "FixedFFNTransformer")


def test_switches_that_tie_tables_are_built_as_given_declared_as_built_and_named_in_a_todo():
    text = drafted("tying_switch_model", "SwitchedTransformer")
    assert "emb_src_trg_weight_sharing=False" in text and "trg_emb_prj_weight_sharing=True" in text
    assert supports_of(text)["share_embeddings"] == (False,) and supports_of(text)["tie_output"] == (True,)
    switches = [todo for todo in todos(text) if "ties or unties the tables" in todo]
    assert len(switches) == 2 and "c.tie_output" in switches[1] and "c.share_embeddings" in switches[0]


def test_a_decoder_that_shifts_its_targets_itself_is_told_by_what_it_does():
    text = " ".join(line.strip("# ") for line in drafted("untied_model", "ShiftingTransformer").splitlines())
    assert "decode seems to shift its targets right itself" in text
    assert "shifts its targets" not in drafted("untied_model", "UntiedTransformer")


def test_an_argument_annotated_bare_nn_module_is_built_from_its_namesake_class_or_left_to_the_user():
    text = drafted("bare_module_model", "EncoderDecoder")
    assert "Module()" not in text
    assert "encoder = Encoder(d_model=c.d_model, num_layers=c.N)" in text
    blocking = [todo for todo in todos(text) if "is annotated nn.Module, which says a module goes there" in todo]
    assert [todo.split("(")[1].split(")")[0] for todo in blocking] == ["decoder", "generator"]
