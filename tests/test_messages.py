"""Failure messages say what differs and where, with every figure readable, and claim nothing unconfirmed."""

from conftest import adapter_path


def test_published_number_messages_keep_small_values_significant(certify):
    """A rate of 3.49e-07 printed as "got 0.0" said nothing; six significant digits whatever the magnitude."""
    run = certify(adapter_path("lr_doubled"), "-k", "published_learning_rates", "--no-training")
    message = run.report["checks"][0]["message"]
    assert "got 0.00315625, published '1.58e-03'" in message  # the practice's logged rate, doubled
    assert "got 0.0," not in message
    table = certify(adapter_path("lr_doubled"), "-k", "lrate_matches_published_paper_table", "--no-training")
    assert "got 3.49386e-07, expected 1.747e-07" in table.report["checks"][0]["message"]


def test_decoder_wiring_suspects_name_the_padding_masks(certify):
    """A decoder layer whose sublayers agree but whose padding is wrong: the suspects include the padding
    masks (they were missing from the decoder's list)."""
    run = certify("mutant:padding_on_queries", "-k", "decoder_layer_matches_reference and not base", "--no-training")
    message = run.report["checks"][0]["message"]
    assert "layer's wiring is suspected" in message and "the padding masks" in message


def test_the_structural_probe_also_looks_at_bias_free_implementations(certify):
    """The probe batch used attention biases (torch.nn's fast path needs them); a bias-free implementation
    refused it and got no structural explanation. It now gets the probe without biases."""
    from conftest import adapter_path

    run = certify(f"{adapter_path('views')}:bias_free_extra_final_norm", "-k", "encode_matches_reference",
                  "--no-training")
    check = run.report["checks"][0]
    assert check["status"] == "failed" and check["examples"]["ran"] >= 1
    assert "extra_final_layer_norm" in check["patterns"]
