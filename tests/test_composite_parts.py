"""Composite parts (``attention_sublayer``, ``ffn_sublayer``): for code whose attention and FFN modules fold in
the residual and the LayerNorm. Their checks run only where the bare parts are missing, catch a wrong
sublayer, and the localisation of a failing layer uses them."""

from pathlib import Path

import numpy as np
import pytest
from conftest import adapter_path

from conformance.boundary.isolation.proxy import Limits
from conformance.boundary.loading import load
from conformance.errors import BadOutput
from conformance.problems.oracle import attention_sublayer, multi_head_attention
from conformance.weights import attention_shapes, random_weights, sublayer_weights

pytest.importorskip("torch")
# pre_norm_blocks imports the walk-through's model from docs/walkthrough: outside its folder, so named to the worker
WALKTHROUGH = str(Path(__file__).parents[1] / "docs" / "walkthrough")
SUBLAYER_CHECKS = {"self_attention_sublayer_matches_reference", "cross_attention_sublayer_matches_reference",
                   "ffn_sublayer_matches_reference"}


def test_an_adapter_with_the_bare_parts_is_not_asked_for_the_composite_ones(certify):
    run = certify("reference", "--no-training", "-k", "sublayer or feed_forward_matches_reference")
    assert run.statuses() == {"feed_forward_matches_reference": "passed",
                              "feed_forward_matches_reference_at_base_size": "passed"}


def test_pre_norm_attention_blocks_fail_the_attention_sublayer_checks_and_are_localised(certify):
    run = certify(adapter_path("pre_norm_blocks"), "--no-training", "-k", "sublayer or encoder_layer_matches",
                  "--allow-read", WALKTHROUGH)
    statuses = run.statuses()
    assert {check: statuses[check] for check in SUBLAYER_CHECKS} == {
        "self_attention_sublayer_matches_reference": "failed", "cross_attention_sublayer_matches_reference": "failed",
        "ffn_sublayer_matches_reference": "passed"}
    messages = {check["id"]: check["message"] for check in run.report["checks"]}
    sublayer = messages["self_attention_sublayer_matches_reference"]
    assert "self-attention sublayer LayerNorm(x + MultiHead(x, x))" in sublayer and "worst at index" in sublayer
    assert statuses["encoder_layer_matches_reference"] == "failed"
    assert "self-attention sublayer suspected (attention_sublayer: the attention, its residual or its norm)" in \
        messages["encoder_layer_matches_reference"]


def test_the_oracle_sublayer_is_layer_norm_of_x_plus_multi_head_attention():
    rng = np.random.default_rng(0)
    d, h = 8, 2
    layer = random_weights({**{f"self_attn.{k}": s for k, s in attention_shapes(d).items()},
                            "norm1.gamma": (d,), "norm1.beta": (d,)}, rng)
    weights = sublayer_weights(layer, "self_attn", "norm1")
    assert sorted(weights) == sorted([*attention_shapes(d), "norm.gamma", "norm.beta"])
    x = rng.normal(size=(2, 3, d))
    residual = x + multi_head_attention(x, x, x, {k: v for k, v in weights.items() if "norm" not in k}, h)[0]
    mu, var = residual.mean(-1, keepdims=True), residual.var(-1, keepdims=True)
    want = weights["norm.gamma"] * (residual - mu) / np.sqrt(var + 1e-5) + weights["norm.beta"]
    np.testing.assert_allclose(attention_sublayer(x, None, weights, h, 1e-5), want, rtol=1e-10, atol=1e-10)


def test_a_composite_part_that_returns_the_wrong_shape_is_an_error_naming_it():
    candidate = load(adapter_path("pre_norm_blocks"), limits=Limits(allow_read=(WALKTHROUGH,)))
    candidate.adapter.ffn_sublayer = lambda x, weights, eps: x[:, :1]
    weights = random_weights({"W1": (4, 6), "b1": (6,), "W2": (6, 4), "b2": (4,), "norm.gamma": (4,),
                              "norm.beta": (4,)}, np.random.default_rng(1))
    with pytest.raises(BadOutput, match=r"ffn_sublayer\(x\(1, 3, 4\)\) returned output.shape=\(1, 1, 4\)"):
        candidate.ffn_sublayer(np.zeros((1, 3, 4), np.float32), weights, 1e-6)
