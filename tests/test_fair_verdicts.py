"""A check fails only for the claim it makes: a layer bug is not a mask bug, a padded position is not a real one."""


def test_padded_query_rows_are_judged_only_where_the_layer_is_right(certify):
    """Pre-norm is a layer bug with correct masks: the mask check is blocked, not failed. A layer that is
    right at real positions and masks padded rows too still fails it."""
    pre_norm = certify("mutant:pre_norm", "-k", "padded_query_rows", "--no-training")
    assert pre_norm.statuses() == {"padded_query_rows_still_follow_the_formula": "blocked"}
    assert pre_norm.report["checks"][0]["blocked_by"] == "encoder_layer_matches_reference"
    masked_rows = certify("mutant:query_rows_also_masked", "-k", "padded_query_rows", "--no-training")
    assert masked_rows.statuses() == {"padded_query_rows_still_follow_the_formula": "failed"}


def test_target_padding_invariance_looks_at_real_positions_only(certify):
    """Its claim is about the real logits: an implementation that also masks padded query rows (uniform
    rows with a finite fill) changes only padded positions, and passes it."""
    run = certify("mutant:query_rows_also_masked", "-k", "appending_target_padding", "--no-training")
    assert run.statuses() == {"appending_target_padding_leaves_real_logits_unchanged": "passed"}, run.out
