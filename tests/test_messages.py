"""Failure messages say what differs and where, with every figure readable, and claim nothing unconfirmed."""

from conftest import adapter_path


def test_published_number_messages_keep_small_values_significant(certify):
    """A rate of 3.49e-07 printed as "got 0.0" said nothing; six significant digits whatever the magnitude."""
    run = certify(adapter_path("lr_doubled"), "-k", "published_learning_rates", "--no-training")
    message = run.report["checks"][0]["message"]
    assert "got 3.49386e-07, published '1.747e-07'" in message
    assert "got 0.0," not in message
