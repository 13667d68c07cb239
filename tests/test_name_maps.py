"""Name maps (``conformance.adapters.names``): canonical names placed among a module's parameter paths.

Pure Python: no module, no torch; the paths below are what ``named_parameters()`` would list.
"""

import re
import subprocess
import sys

import pytest

from conformance.adapters import NameMap, NameMapError, sub_names
from conformance.adapters.names import Slot, spellings

PATHS = [
    "embed.weight",
    "enc.layers.0.attn.qkv.weight", "enc.layers.0.attn.qkv.bias", "enc.layers.0.attn.proj.weight",
    "enc.layers.0.ln1.weight", "enc.layers.0.ln2.weight",
    "enc.layers.1.attn.qkv.weight", "enc.layers.1.ln1.weight", "enc.layers.1.ln2.weight",
    "dec.layers.0.cross.q.weight", "dec.layers.0.cross.kv.weight",
]


def test_a_canonical_tensor_may_be_listed_under_the_fused_projections_that_hold_it():
    assert spellings("encoder.0.self_attn.W_K") == [("encoder.0.self_attn.W_K", 0, 1, None),
                                                    ("encoder.0.self_attn.W_QKV", 1, 3, None),
                                                    ("encoder.0.self_attn.W_KV", 0, 2, None)]
    assert spellings("E") == [("E", 0, 1, None)]
    assert spellings("ffn.b1") == [("ffn.b1", 0, 1, None), ("ffn.W1", 0, 1, "bias")]  # beside its matrix
    assert spellings("norm2.beta") == [("norm2.beta", 0, 1, None), ("norm2", 0, 1, "bias")]  # on its norm


def test_an_entry_may_name_a_module_whose_bias_and_norm_vectors_follow():
    paths = ["enc.0.qkv.weight", "enc.0.qkv.bias", "enc.0.fc1.weight", "enc.0.fc1.bias", "enc.0.ln.weight",
             "enc.0.ln.bias", "mha.in_proj_weight", "mha.in_proj_bias"]
    names = NameMap({"encoder.{l}.self_attn.W_QKV": "enc.{l}.qkv", "encoder.{l}.ffn.W1": "enc.{l}.fc1.weight",
                     "encoder.{l}.norm1": "enc.{l}.ln", "cross_attn.W_QKV": "mha.in_proj_weight"})
    got = names.resolve(["encoder.0.self_attn.W_K", "encoder.0.self_attn.b_K", "encoder.0.ffn.b1",
                         "encoder.0.norm1.gamma", "encoder.0.norm1.beta", "cross_attn.b_V"], paths)
    assert got == {"encoder.0.self_attn.W_K": (Slot("enc.0.qkv.weight", 1, 3),),
                   "encoder.0.self_attn.b_K": (Slot("enc.0.qkv.bias", 1, 3),),
                   "encoder.0.ffn.b1": (Slot("enc.0.fc1.bias"),),
                   "encoder.0.norm1.gamma": (Slot("enc.0.ln.weight"),),
                   "encoder.0.norm1.beta": (Slot("enc.0.ln.bias"),),
                   "cross_attn.b_V": (Slot("mha.in_proj_bias", 2, 3),)}
    with pytest.raises(NameMapError, match=r"ffn.b2 \(key 'encoder.{l}.ffn.W2'\) -> 'enc.0.fc2 \(its bias\)'"):
        NameMap({"encoder.{l}.ffn.W2": "enc.{l}.fc2"}).resolve(["encoder.0.ffn.b2"], paths)


def test_layers_and_stars_carry_over_from_key_to_value():
    names = NameMap({"encoder.{l}.norm*.gamma": "enc.layers.{l}.ln*.weight"})
    got = names.resolve(["encoder.0.norm1.gamma", "encoder.1.norm2.gamma"], PATHS)
    assert got == {"encoder.0.norm1.gamma": (Slot("enc.layers.0.ln1.weight"),),
                   "encoder.1.norm2.gamma": (Slot("enc.layers.1.ln2.weight"),)}


def test_fused_projections_give_each_canonical_tensor_its_block():
    names = NameMap({"encoder.{l}.self_attn.W_QKV": "enc.layers.{l}.attn.qkv.weight",
                     "decoder.{l}.cross_attn.W_Q": "dec.layers.{l}.cross.q.weight",
                     "decoder.{l}.cross_attn.W_KV": "dec.layers.{l}.cross.kv.weight"})
    got = names.resolve(["encoder.1.self_attn.W_V", "decoder.0.cross_attn.W_Q", "decoder.0.cross_attn.W_V"], PATHS)
    assert got["encoder.1.self_attn.W_V"] == (Slot("enc.layers.1.attn.qkv.weight", 2, 3),)
    assert got["decoder.0.cross_attn.W_Q"] == (Slot("dec.layers.0.cross.q.weight"),)  # listed directly: whole
    assert got["decoder.0.cross_attn.W_V"] == (Slot("dec.layers.0.cross.kv.weight", 1, 2),)


def test_a_list_is_copies_a_suffix_T_is_stored_transposed_a_regex_matches_in_full():
    paths = ["src.weight", "tgt.weight", "out.weight", "blocks.0.w"]
    names = NameMap({"E": ["src.weight", "tgt.weight", "out.weight"],
                     "encoder.{l}.ffn.W1": re.compile(r"blocks\.{l}\.w"), "W_out": "out.weight.T"})
    got = names.resolve(["E", "encoder.0.ffn.W1", "W_out"], paths)
    assert [slot.path for slot in got["E"]] == ["src.weight", "tgt.weight", "out.weight"]
    assert got["encoder.0.ffn.W1"] == (Slot("blocks.0.w"),)
    assert got["W_out"] == (Slot("out.weight", transposed=True),)


def test_a_wildcard_left_in_the_value_must_single_out_one_parameter():
    assert NameMap({"E": "emb*"}).resolve(["E"], PATHS)["E"] == (Slot("embed.weight"),)
    with pytest.raises(NameMapError, match=r"matches 2 parameters: enc.layers.0.ln1.weight, enc.layers.0.ln2.weight"):
        NameMap({"encoder.{l}.norm1.gamma": "enc.layers.{l}.ln*"}).resolve(["encoder.0.norm1.gamma"], PATHS)


def test_every_misfit_is_reported_at_once_with_the_closest_paths():
    names = NameMap({"encoder.{l}.self_attn.W_QKV": "enc.layers.{l}.attn.qkv.weights",
                     "encoder.{l}.norm1.gamma": "enc.layers.{l}.ln1.weight",
                     "*.{l}.norm1.gamma": "dec.layers.{l}.ln1.weight"})
    with pytest.raises(NameMapError) as caught:
        names.resolve(["encoder.0.self_attn.W_Q", "encoder.0.norm1.gamma", "encoder.0.norm2.gamma"], PATHS)
    problems = caught.value.problems
    assert len(problems) == 3
    assert "matches no parameter; closest: enc.layers.0.attn.qkv.weight" in problems[0]
    assert "encoder.0.norm1.gamma is listed by 2 entries" in problems[1]
    assert "no entry for encoder.0.norm2.gamma: add a key for it (e.g. 'encoder.{l}.norm2.gamma')" in problems[2]
    assert str(caught.value).startswith("the name map does not fit the module (3 problems):")


def test_sub_names_is_the_part_of_a_map_under_one_layer_relative_to_both_prefixes():
    names = {"E": "embed.weight",
             "*.{l}.self_attn.W_QKV": "*.layers.{l}.attn.qkv.weight",
             "*.{l}.ffn.W1": "*.layers.{l}.mlp.fc1.weight", "*.{l}.norm*.gamma": "*.layers.{l}.ln*.weight"}
    # norm3 comes along (the key's star matches it); an encoder layer's weights never ask for it
    assert sub_names(names, "encoder.{l}.", "encoder.layers.{l}.") == {
        "self_attn.W_QKV": "attn.qkv.weight", "norm1.gamma": "ln1.weight", "norm2.gamma": "ln2.weight",
        "norm3.gamma": "ln3.weight", "ffn.W1": "mlp.fc1.weight"}
    assert sub_names(names, "encoder.{l}.self_attn.", "encoder.layers.{l}.attn.") == {"W_QKV": "qkv.weight"}
    assert sub_names(names, "encoder.{l}.ffn.", "encoder.layers.{l}.mlp.") == {"W1": "fc1.weight"}


def test_the_helpers_import_without_torch():
    """conformance.adapters must not need torch; only conformance.adapters.torch does."""
    code = ("import sys; sys.modules['torch'] = None\n"
            "import conformance.adapters, conformance.adapters.names, conformance.adapters.propose\n"
            "print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr


# -- what a model's map implies: the modules of a layer, a sublayer, an attention ---------------------

WALKTHROUGH = {  # docs/walkthrough/my_transformer.py: residual and norm inside each block, fused qkv and kv
    "E": "embedding.weight",
    "encoder.{l}.self_attn.W_QKV": "encoder.{l}.attention.qkv.weight",
    "decoder.{l}.self_attn.W_QKV": "decoder.{l}.self_attention.qkv.weight",
    "encoder.{l}.self_attn.W_O": "encoder.{l}.attention.out.weight",
    "decoder.{l}.self_attn.W_O": "decoder.{l}.self_attention.out.weight",
    "encoder.{l}.norm1": "encoder.{l}.attention.norm",
    "encoder.{l}.norm2": "encoder.{l}.feed_forward.norm",
    "*.{l}.ffn.W1": "*.{l}.feed_forward.fc1.weight",
    "*.{l}.ffn.W2": "*.{l}.feed_forward.fc2.weight",
    "decoder.{l}.cross_attn.W_Q": "decoder.{l}.cross_attention.q.weight",
    "decoder.{l}.cross_attn.W_KV": "decoder.{l}.cross_attention.kv.weight",
    "decoder.{l}.cross_attn.W_O": "decoder.{l}.cross_attention.out.weight",
    "decoder.{l}.norm2": "decoder.{l}.cross_attention.norm",
}


def test_the_module_of_a_layer_or_sublayer_is_the_common_module_of_its_entries():
    from conformance.adapters.names import module_of

    assert module_of(WALKTHROUGH, "encoder.{l}.") == "encoder.{l}."
    assert module_of(WALKTHROUGH, "decoder.{l}.cross_attn.") == "decoder.{l}.cross_attention."
    assert module_of(WALKTHROUGH, "encoder.{l}.ffn.") == "encoder.{l}.feed_forward."
    nn_style = {"*.{l}.ffn.W1": "model.*.layers.{l}.linear1", "*.{l}.ffn.W2": "model.*.layers.{l}.linear2"}
    assert module_of(nn_style, "decoder.{l}.") == "model.decoder.layers.{l}."
    assert module_of(nn_style, "encoder.{l}.self_attn.") is None  # the map lists nothing there


def test_layer_and_sublayer_maps_and_attention_modules_are_derived_from_the_models_map():
    from conformance.adapters.names import attention_modules, layer_names, sublayer_names

    assert layer_names(WALKTHROUGH, "encoder")["self_attn.W_QKV"] == "attention.qkv.weight"
    assert layer_names(WALKTHROUGH, "encoder")["norm2"] == "feed_forward.norm"
    assert sublayer_names(WALKTHROUGH, "cross_attn") == {"W_Q": "q.weight", "W_KV": "kv.weight", "W_O": "out.weight"}
    assert sublayer_names(WALKTHROUGH, "ffn", with_norm=True) == {"W1": "fc1.weight", "W2": "fc2.weight",
                                                                  "norm": "norm"}
    assert attention_modules(WALKTHROUGH) == {"encoder.{l}.self_attn": "encoder.{l}.attention",
                                              "decoder.{l}.self_attn": "decoder.{l}.self_attention",
                                              "decoder.{l}.cross_attn": "decoder.{l}.cross_attention"}
    flat = {"*.{l}.self_attn.W_Q": "*.layers.{l}.wq", "*.{l}.self_attn.W_O": "*.layers.{l}.wo"}  # in the layer
    assert attention_modules(flat) == {}  # nothing to hook but the layer itself
