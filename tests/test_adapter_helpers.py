"""The conversions the protocol offers for real code's losses and schedules are exact."""

import math

import numpy as np
import pytest

from conformance.adapters import cross_entropy_from_kl, mean_from_sum, rate_from_lambda_lr, smoothed_target_entropy
from conformance.paper import published

torch = pytest.importorskip("torch")


def test_the_smoothed_targets_entropy_is_the_lessons_floor():
    assert smoothed_target_entropy(13, 0.1) == pytest.approx(published.value("ls.best_loss"), abs=5e-4)
    assert smoothed_target_entropy(13, 0.0) == 0.0


def test_kl_divergence_against_the_smoothed_target_converts_to_pytorchs_smoothed_cross_entropy():
    rng = np.random.default_rng(0)
    V, eps, pad = 11, 0.1, 0
    logits = torch.tensor(rng.normal(0, 2, (20, V)))
    targets = torch.tensor(rng.integers(1, V, 20))
    targets[[3, 7]] = pad
    real = targets != pad
    q = torch.full((20, V), eps / V, dtype=torch.float64)
    q[torch.arange(20), targets] += 1 - eps
    kl = torch.nn.KLDivLoss(reduction="sum")(torch.log_softmax(logits, -1)[real], q[real]) / real.sum()
    want = torch.nn.CrossEntropyLoss(ignore_index=pad, label_smoothing=eps)(logits, targets)
    assert cross_entropy_from_kl(kl.item(), V, eps) == pytest.approx(want.item(), rel=1e-12)


def test_a_summed_loss_converts_to_the_mean_over_real_targets():
    targets = np.array([[4, 5, 0], [6, 0, 0]])
    assert mean_from_sum(6.0, targets, pad_id=0) == 2.0
    with pytest.raises(ValueError, match="every target is padding"):
        mean_from_sum(1.0, np.zeros(3), pad_id=0)


def test_lambda_lr_counts_from_zero_the_protocol_from_one():
    """The lesson's own LambdaLR(lambda s: lrate(s + 1)) gives lrate(1) to the first update."""
    def lrate(step, d_model=64, warmup=400):
        return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)

    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lrate(s + 1))
    for step in range(1, 6):
        assert opt.param_groups[0]["lr"] == pytest.approx(rate_from_lambda_lr(lambda s: lrate(s + 1), step))
        assert rate_from_lambda_lr(lambda s: lrate(s + 1), step) == pytest.approx(lrate(step))
        opt.step()
        schedule.step()
    assert math.isclose(rate_from_lambda_lr(lambda s: 2.0, 1, base_lr=0.5), 1.0)
