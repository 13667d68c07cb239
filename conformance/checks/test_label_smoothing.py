"""§5.4 Label smoothing: cross-entropy against q(k) = (1 - eps)[k = right] + eps / V, padding ignored.

PyTorch's convention (nn.CrossEntropyLoss(label_smoothing=eps, ignore_index=pad)), which the lesson
uses: eps is spread over all V tokens. The lesson's listing prints q = 0.9077 / 0.0077 for V = 13, the
floor 0.537 (the entropy of q) and 1.846 for a model 100 % sure. Two other conventions are common and
are named when a candidate follows them: eps / (V - 1) over the wrong tokens only, and the annotated
transformer's eps / (V - 2) with the padding column at 0.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance import claims, published
from conformance.scenarios import no_padding
from conformance.strategies import seeds
from conformance.tolerances import Tolerance

SECTION = "§5.4 Regularization: label smoothing"
pytestmark = pytest.mark.requires("label_smoothed_loss")

V, EPS, RIGHT = 13, 0.1, 5  # the listing's n_vocab, eps and right token
NO_PAD = no_padding(V)  # the listing's loss has no ignore_index: a valid id that is no target
LOSS = Tolerance(1e-5, 1e-5, "a mean of log-softmax sums in float32")


def log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def smoothed_targets(targets, V, eps, *, convention="pytorch", pad_id=None):
    q = np.zeros((len(targets), V))
    if convention == "pytorch":
        q += eps / V
        q[np.arange(len(targets)), targets] += 1 - eps
    elif convention == "V-1":
        q += eps / (V - 1)
        q[np.arange(len(targets)), targets] = 1 - eps
    else:  # annotated transformer: eps / (V - 2), padding column 0
        q += eps / (V - 2)
        q[:, pad_id] = 0.0
        q[np.arange(len(targets)), targets] = 1 - eps
    return q


def smoothed_loss(logits, targets, eps, pad_id, *, convention="pytorch", ignore_padding=True, reduce="mean"):
    per_token = -(smoothed_targets(targets, logits.shape[-1], eps, convention=convention, pad_id=pad_id)
                  * log_softmax(logits.astype(np.float64))).sum(-1)
    real = targets != pad_id if ignore_padding else np.ones(len(targets), bool)
    return per_token[real].mean() if reduce == "mean" else per_token[real].sum()


def alternatives(logits, targets, eps, pad_id) -> dict[str, float]:
    named = {
        "eps spread over the V - 1 wrong tokens (q = eps / (V - 1)) instead of PyTorch's eps / V over all":
            smoothed_loss(logits, targets, eps, pad_id, convention="V-1"),
    }
    if 0 <= pad_id < logits.shape[-1]:
        named["annotated-transformer convention: eps / (V - 2) with the padding column at 0"] = smoothed_loss(
            logits, targets, eps, pad_id, convention="annotated")
    return named | {
        "padding targets not ignored": smoothed_loss(logits, targets, eps, pad_id, ignore_padding=False),
        "sum over tokens instead of the mean": smoothed_loss(logits, targets, eps, pad_id, reduce="sum"),
        "no label smoothing (plain cross-entropy)": smoothed_loss(logits, targets, 0.0, pad_id),
    }


@claims.LABEL_SMOOTHING
def test_smoothed_loss_matches_published_floor_and_sure_model(candidate, check):
    """Predicting q exactly costs 0.537, the floor; a model 100 % sure of the right token pays 1.846."""
    q = smoothed_targets(np.array([RIGHT]), V, EPS)
    sure = np.zeros((1, V))
    sure[0, RIGHT] = 20.0
    for logits, fact_id in ((np.log(q), "ls.best_loss"), (sure, "ls.sure_loss")):
        got = candidate.label_smoothed_loss(logits, np.array([RIGHT]), EPS, NO_PAD)
        check.close(got, published.value(fact_id), published.tolerance(fact_id), what=f"smoothed loss [{fact_id}]",
                    alternatives=alternatives(logits, np.array([RIGHT]), EPS, NO_PAD),
                    rerun=lambda other, z=logits: other.label_smoothed_loss(z, np.array([RIGHT]), EPS, NO_PAD))


def implied_target(candidate, token, V, eps, t=1.0):
    """q(token) read off the loss: L(t * e_token) = -q(token) * t + log(V - 1 + e^t)."""
    logits = np.zeros((1, V))
    logits[0, token] = t
    loss = candidate.label_smoothed_loss(logits, np.array([RIGHT]), eps, NO_PAD)
    return (np.log(V - 1 + np.exp(t)) - loss) / t


@claims.LABEL_SMOOTHING
def test_smoothed_target_matches_published_values(candidate, check):
    """The target the loss implies puts 0.9077 on the right token and 0.0077 on each other token."""
    for token, fact_id in ((RIGHT, "ls.right.4dp"), (0, "ls.other.4dp")):
        check.close(implied_target(candidate, token, V, EPS), published.value(fact_id), published.tolerance(fact_id),
                    what=f"q({'right' if token == RIGHT else 'other'}) implied by the loss [{fact_id}]")


@claims.LABEL_SMOOTHING
@given(N=st.integers(1, 40), V=st.integers(3, 50), eps=st.sampled_from([0.0, 0.1, 0.2]), seed=seeds,
       scale=st.sampled_from([0.5, 3.0, 10.0]))
def test_smoothed_loss_matches_formula_with_padding(candidate, check, N, V, eps, seed, scale):
    """For random logits and targets with some padding, the loss equals the formula (padding ignored)."""
    rng = np.random.default_rng(seed)
    pad_id = int(rng.integers(V))
    targets = rng.integers(0, V, N)
    targets[rng.random(N) < 0.3] = pad_id
    targets[0] = (pad_id + 1) % V  # at least one real target: the mean over none is undefined
    logits = rng.normal(0, scale, (N, V)).astype(candidate.conventions.dtype)
    got = candidate.label_smoothed_loss(logits, targets, eps, pad_id)
    check.close(got, smoothed_loss(logits, targets, eps, pad_id), LOSS,
                what=f"smoothed loss (N={N}, V={V}, eps={eps}, pad_id={pad_id})",
                alternatives=alternatives(logits, targets, eps, pad_id),
                rerun=lambda other: other.label_smoothed_loss(logits, targets, eps, pad_id))
