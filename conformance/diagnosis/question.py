"""A question any candidate can be asked: the failing example's, and a second one to confirm a match."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

PROBE_SEED = 7919  # the second problem draws fresh weights and inputs: seed + this


@dataclass(frozen=True)
class Question:
    """``answer(candidate, problem)`` is what the check asked its candidate, as a function of the problem,
    so that the same question can be put to any mutant, on the failing ``problem`` and on ``probe`` (by
    default ``probe_of(problem)``: bigger sizes and fresh weights for a ``LayerSizes`` or ``ModelSizes``).
    A question without a second problem can still localise a failure, but names no bug."""

    answer: Callable[[Any, Any], Any]
    problem: Any = None
    probe: Any = None
    tol: Any = None  # the tolerance a match is judged with; None: the failing comparison's
    agree: Callable[[np.ndarray, np.ndarray], bool] | None = None  # instead of ``tol``: a distance of its own
    # Where ``answer`` is one part of what a call returns (attention's weights, not its output): the whole return
    # (a tuple), and ``part``: the answer's index in it and its name. A known bug is named only when it answers the
    # whole call as the candidate does: one that matches the weights but not the output the candidate got right is
    # another bug.
    whole: Callable[[Any, Any], Any] | None = None
    part: tuple[int, str] | None = None
    # Problems of another kind the question can also be asked (the configuration with another declared choice:
    # tied or untied, shared or separate tables): a known bug is named only when it answers each of them as the
    # candidate does, though it may answer as the paper there. Two bugs that give one wrong number at one kind of
    # configuration (a V x d_model too many: an output matrix, or a second embedding table) part at another.
    variants: tuple = ()

    def ask(self, candidate, problem: Any = None) -> np.ndarray:
        """The candidate's answer as float64 (the caller fits the problem into the candidate's configurations)."""
        return np.asarray(self.answer(candidate, self.problem if problem is None else problem), dtype=np.float64)

    def ask_whole(self, candidate, problem: Any) -> list[np.ndarray] | None:
        """The whole call's answer (``whole``), each part as float64; None where the question has no ``whole``."""
        if self.whole is None:
            return None
        return [np.asarray(part, dtype=np.float64) for part in self.whole(candidate, problem)]

    def second(self) -> Any:
        return self.probe if self.probe is not None else probe_of(self.problem)


def profile_problem():
    """The one fixed model problem a candidate's profile is asked on (the combination search's and the
    neighbourhood's): small, padded, the same whichever check asks first."""
    from conformance.config import ModelConfig
    from conformance.problems.scenarios import ModelSizes

    return ModelSizes(ModelConfig(src_vocab=12, tgt_vocab=12, d_model=8, h=2, d_ff=16, N=2), B=2, S=5, T=4, seed=11)


def profile_ladder(candidate) -> list[tuple[str, Question, Any]]:
    """The fixed questions a candidate's profile of known bugs is asked, from its parts to its model: (the part the
    question needs, the question, its tolerance table). Real code deviates in the same places for every check, and a
    part shows fewer of its deviations at once than the model: each rung's search starts from what the rungs below
    confirmed (OpenNMT-py's pre-norm on its encoder layer, then its final norms on its memory, then its mask on the
    padded logits)."""
    from conformance.problems import questions
    from conformance.problems.scenarios import LayerSizes
    from conformance.tolerances import ELEMENTWISE, LAYER, MODEL

    longest = getattr(candidate, "longest", lambda n: n)
    sizes = profile_problem()
    layer = LayerSizes(B=2, S=5, T=4, h=2, d_k=4, d_ff=16, bias=True, seed=11)
    return [
        ("positional_encoding", Question(questions.positional_encoding_table, (longest(50), 64), probe=(12, 32)),
         ELEMENTWISE),
        ("encoder_layer", Question(questions.encoder_layer_output, layer), LAYER),
        ("model.encode", Question(questions.memory, sizes), MODEL),
        ("build_model", Question(questions.logits, sizes), MODEL),
    ]


def probe_of(problem: Any) -> Any:
    """A second, non-degenerate problem of the same kind: several heads, several positions with padding,
    two layers, d_model 16, fresh seed; the features a candidate declares (biases, eps, d_ff ratio) kept."""
    from conformance.problems.scenarios import LayerSizes, ModelSizes

    if isinstance(problem, LayerSizes):
        d_ff = 4 * 16 if problem.d_ff == 4 * problem.d_model else 24
        return dataclasses.replace(problem, B=2, S=6, T=5, h=2, d_k=8, d_ff=d_ff, seed=problem.seed + PROBE_SEED)
    if isinstance(problem, ModelSizes):
        config = problem.config
        d_ff = 4 * 16 if config.d_ff == 4 * config.d_model else 24
        config = config.replace(d_model=16, h=2, d_ff=d_ff, N=2, src_vocab=max(config.src_vocab, 12),
                                tgt_vocab=max(config.tgt_vocab, 12))
        return ModelSizes(config, B=2, S=6, T=5, seed=problem.seed + PROBE_SEED)
    return None
