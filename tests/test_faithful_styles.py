"""Faithful implementations written in other styles pass every claim of the paper and the lessons.

A claim the paper does not make must never fail a faithful implementation: the suite's own conventions
(a fully masked row) are at most advisory, and the arguments the checks pass are ones real code accepts.
"""

from conftest import adapter_path


def test_no_padding_is_passed_as_a_token_id_not_minus_100(certify):
    """The label-smoothing checks mean "no padding" with a valid id that is no target: code that checks
    or indexes its padding column (``0 <= pad_id < V``) errored on PyTorch's -100."""
    run = certify(adapter_path("lesson_style"), "-k", "smooth", "--no-training")
    assert run.with_status("passed") == set(run.statuses()), run.out
    assert len(run.statuses()) == 4


