"""§5.4 Label smoothing: cross-entropy against q(k) = (1 - eps)[k = right] + eps / V, padding ignored.

PyTorch's convention (nn.CrossEntropyLoss(label_smoothing=eps, ignore_index=pad)), which the lesson
uses: eps is spread over all V tokens. The lesson's listing prints q = 0.9077 / 0.0077 for V = 13, the
floor 0.537 (the entropy of q) and 1.846 for a model 100 % sure. Other conventions are common (eps /
(V - 1) over the wrong tokens only, the annotated transformer's eps / (V - 2) with the padding column at
0, a KL divergence, a sum): the catalogue of known bugs names them when a candidate follows one.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.boundary.isolation.frameworks import cast
from conformance.diagnosis import PROBE_SEED, Question
from conformance.paper import claims, formulas, published
from conformance.problems.scenarios import SmoothedLossProblem, no_padding, seeds
from conformance.tolerances import Tolerance

SECTION = "§5.4 Regularization: label smoothing"
pytestmark = pytest.mark.requires("label_smoothed_loss")

V, EPS, RIGHT = 13, 0.1, 5  # the listing's n_vocab, eps and right token
NO_PAD = no_padding(V)  # the listing's loss has no ignore_index: a valid id that is no target
LOSS = Tolerance(1e-5, 1e-5, "a mean of log-softmax sums in float32")


def loss(candidate, problem) -> float:
    """The candidate's loss on ``problem`` = (logits, targets, eps, pad_id): the question every check asks."""
    return candidate.label_smoothed_loss(*problem)


def random_problem(N: int, V: int, eps: float, seed: int, scale: float, dtype: str = "float64"):
    """Random logits and targets with some padding, at least one real target (the mean over none is undefined)."""
    rng = np.random.default_rng(seed)
    pad_id = int(rng.integers(V))
    targets = rng.integers(0, V, N)
    targets[rng.random(N) < 0.3] = pad_id
    targets[0] = (pad_id + 1) % V
    return SmoothedLossProblem(cast(rng.normal(0, scale, (N, V)), dtype), targets, eps, pad_id)


# A second problem to confirm a match: a dozen tokens over 9, some padded, eps 0.1.
PROBE = random_problem(12, 9, 0.1, PROBE_SEED, 3.0)


def loss_question(problem) -> Question:
    return Question(loss, problem, probe=PROBE, tol=LOSS)


def listing_problem(logits) -> tuple:
    """The listing's loss: one target, the right token 5, over 13 tokens, eps 0.1, no padding."""
    return SmoothedLossProblem(logits, np.array([RIGHT]), EPS, NO_PAD)


@claims.LABEL_SMOOTHING
def test_smoothed_loss_matches_published_floor_and_sure_model(candidate, check):
    """Predicting q exactly costs 0.537, the floor; a model 100 % sure of the right token pays 1.846."""
    q = formulas.smoothed_target(V, EPS, RIGHT)[None]
    sure = np.zeros((1, V))
    sure[0, RIGHT] = 20.0
    for logits, fact_id in ((np.log(q), "ls.best_loss"), (sure, "ls.sure_loss")):
        problem = listing_problem(logits)
        check.close(loss(candidate, problem), check.published(fact_id), check.printed(fact_id),
                    what=f"smoothed loss [{fact_id}]", ask=loss_question(problem))


def implied_target(candidate, token, V, eps, t=1.0):
    """q(token) read off the loss: L(t * e_token) = -q(token) * t + log(V - 1 + e^t)."""
    logits = np.zeros((1, V))
    logits[0, token] = t
    return (np.log(V - 1 + np.exp(t)) - loss(candidate, (logits, np.array([RIGHT]), eps, NO_PAD))) / t


@claims.LABEL_SMOOTHING
def test_smoothed_target_matches_published_values(candidate, check):
    """The target the loss implies puts 0.9077 on the right token and 0.0077 on each other token."""
    for token, fact_id in ((RIGHT, "ls.right.4dp"), (0, "ls.other.4dp")):
        logits = np.zeros((1, V))
        logits[0, token] = 1.0
        check.close(implied_target(candidate, token, V, EPS), check.published(fact_id), check.printed(fact_id),
                    what=f"q({'right' if token == RIGHT else 'other'}) implied by the loss [{fact_id}]",
                    ask=loss_question(listing_problem(logits)))


@claims.LABEL_SMOOTHING
@given(N=st.integers(1, 40), V=st.integers(3, 50), eps=st.sampled_from([0.0, 0.1, 0.2]), seed=seeds,
       scale=st.sampled_from([0.5, 3.0, 10.0]))
def test_smoothed_loss_matches_formula_with_padding(candidate, check, N, V, eps, seed, scale):
    """For random logits and targets with some padding, the loss equals the formula (padding ignored)."""
    problem = candidate.fit(random_problem(N, V, eps, seed, scale, candidate.conventions.dtype))  # a declared eps
    logits, targets, eps, pad_id = problem
    check.close(loss(candidate, problem), formulas.smoothed_loss(logits, targets, eps, pad_id), LOSS,
                what=f"smoothed loss (N={N}, V={V}, eps={eps}, pad_id={pad_id})", ask=loss_question(problem))


OWNED = {"ls.best_loss", "ls.sure_loss", "ls.right.4dp", "ls.other.4dp"}


# -- Every other printed number of §5.4: each fact has one home, the checks above own theirs
def smoothing_quantity(candidate, quantity: str, V: int, eps: float) -> float:
    """What the lesson prints, asked of the candidate's loss: q(right), q(other), the floor, 100 % sure."""
    right = 5  # the listing's right token
    if quantity in ("right", "other"):
        token = right if quantity == "right" else 0
        logits = np.zeros((1, V))
        logits[0, token] = 1.0  # L(e_token) = -q(token) + log(V - 1 + e): q(token) read off the loss
        loss = candidate.label_smoothed_loss(logits, np.array([right]), eps, no_padding(V))
        return float(np.log(V - 1 + np.e) - loss)
    q = np.full((1, V), eps / V)
    q[0, right] += 1 - eps
    logits = np.log(q) if quantity == "best_loss" else np.where(np.arange(V) == right, 20.0, 0.0)[None]
    return candidate.label_smoothed_loss(logits, np.array([right]), eps, no_padding(V))


@claims.LABEL_SMOOTHING
@pytest.mark.requires("label_smoothed_loss")
def test_published_label_smoothing_values(candidate, check):
    """q = 0.908 / 0.9077 on the right token and 0.0077 elsewhere; the floor 0.537; 1.846 when 100 % sure."""
    pairs = []
    for entry in (e for e in published.of_kind("label_smoothing") if e["id"] not in OWNED):
        a = entry["args"]
        pairs.append(
            (entry["id"], a.get("scale", 1) * smoothing_quantity(candidate, a["quantity"], a["n_vocab"], a["eps"]))
        )
    for entry in published.of_kind("listing_value"):
        if entry["args"].get("listing") == "label smoothing" and entry["id"] not in OWNED:
            pairs.append((entry["id"], smoothing_quantity(candidate, entry["args"]["key"], 13, 0.1)))
    # "0.9077 0.0077"; "best possible loss 0.537; 100% sure: 1.846"
    targets, losses = published.listing_lines("label smoothing")
    pairs += [
        (targets, [smoothing_quantity(candidate, q, 13, 0.1) for q in ("right", "other")]),
        (losses, [smoothing_quantity(candidate, "best_loss", 13, 0.1), 100,
                  smoothing_quantity(candidate, "sure_loss", 13, 0.1)]),
    ]
    check.published_values(pairs, what="label smoothing")
