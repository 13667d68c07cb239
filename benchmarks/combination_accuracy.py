"""How often the diagnosis names a combination of known bugs exactly (docs/mutants.md, "Several bugs at once").

Draws composable pairs and triples of the catalogue's NumPy component mutants (fixed seed), and asks the
diagnosis directly, on the layer and component questions the checks ask (encoder layer, decoder layer,
multi-head attention, feed-forward, LayerNorm, positional encoding), at fixed non-degenerate sizes. A draw
counts on each question where the combination's answer differs from every proper sub-combination's (a bug
its question cannot see is not the diagnosis' to name). Scored per (draw, question):

  exactly   the first name is the drawn combination, or one with the same answer there (within 1e-12)
  partly    only a strict part of it is named (one of its bugs hides the other there)
  false     a name that is neither: a wrong bug named with a match's confidence
  nothing   no name

and leave-one-out: each bug of the draw left out of the catalogue in turn, a name whose answer differs from
the candidate's is a false naming (naming nothing is right).

    python benchmarks/combination_accuracy.py [--pairs 30] [--triples 10] [--seed 0]
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from conformance.diagnosis import EXCLUDE_ENV, Question, confirmed_matches  # noqa: E402
from conformance.diagnosis.catalogue import _loaded  # noqa: E402
from conformance.diagnosis.combine import combine  # noqa: E402
from conformance.implementations.numpy_impl.adapter import NumpyAdapter  # noqa: E402
from conformance.problems import questions  # noqa: E402
from conformance.problems.scenarios import LayerSizes  # noqa: E402
from conformance.tolerances import LAYER, for_candidate  # noqa: E402

SIZES = LayerSizes(B=2, S=5, T=4, h=2, d_k=4, d_ff=16, bias=True, seed=3)
# {label: (answer, problem, second problem: None for the suite's own ``probe_of``)}
QUESTIONS = {
    "encoder layer": (questions.encoder_layer_output, SIZES, None),
    "decoder layer": (questions.decoder_layer_output, SIZES, None),
    "self-attention": (questions.self_attention_output, SIZES, None),
    "feed-forward": (questions.feed_forward_output, SIZES, None),
    "positional encoding": (lambda candidate, size: candidate.positional_encoding(*size), (10, 16), (12, 32)),
}
SAME = 1e-12


def numpy_mutants() -> list[str]:
    """The NumPy mutants whose answer to one of the questions differs from the paper's (the schedule, label
    smoothing and parameter-count bugs are not asked here)."""
    from conformance.boundary.loading import load

    paper = load("numpy")
    return [known.name for known in _loaded() if isinstance(getattr(known.candidate, "adapter", None), NumpyAdapter)
            and any(not same(ask(known.candidate, answer, problem), ask(paper, answer, problem))
                    for answer, problem, _ in QUESTIONS.values())]


def draws(names: list[str], size: int, count: int, rng: random.Random) -> list[tuple[str, ...]]:
    composable = [group for group in itertools.combinations(names, size) if combine(*group) is not None]
    return rng.sample(composable, min(count, len(composable)))


def ask(candidate, answer, problem):
    try:
        return np.asarray(answer(candidate, candidate.fit(problem)), np.float64)
    except Exception:  # noqa: BLE001 - a question this candidate cannot answer is not scored
        return None


def same(a, b) -> bool:
    return a is not None and b is not None and a.shape == b.shape and bool(np.abs(a - b).max() <= SAME)


def sub_candidates(group):
    """Every proper non-empty sub-combination's candidate (singles from the catalogue)."""
    singles = {known.name: known.candidate for known in _loaded()}
    for size in range(1, len(group)):
        for part in itertools.combinations(group, size):
            yield part, (singles[part[0]] if size == 1 else combine(*part).candidate)


def score(group, answer, problem, probe) -> str | None:
    candidate = combine(*group).candidate
    mine = ask(candidate, answer, problem)
    if mine is None or any(same(mine, ask(sub, answer, problem)) for _, sub in sub_candidates(group)):
        return None  # the question cannot see every bug of the group
    question = Question(answer, candidate.fit(problem), probe)
    matches = confirmed_matches(candidate, question, for_candidate(LAYER, candidate))
    if not matches:
        return "nothing"
    first = matches[0].get("mutants") or [matches[0]["mutant"]]
    if tuple(sorted(first)) == tuple(sorted(group)):
        return "exactly"
    named = combine(*first).candidate if len(first) > 1 else {k.name: k.candidate for k in _loaded()}[first[0]]
    if same(mine, ask(named, answer, problem)) and set(first) != set(group):
        if set(first) < set(group):
            return "partly"
        return "exactly"  # another combination with the same answer there: no output can tell them apart
    return "partly" if set(first) < set(group) else "false"


def leave_one_out(group, answer, problem, probe) -> int:
    """How many of the group's bugs, each left out of the catalogue in turn, let a name through whose answer
    differs from the candidate's there (a false naming; naming nothing is right)."""
    candidate = combine(*group).candidate
    mine, question = ask(candidate, answer, problem), Question(answer, candidate.fit(problem), probe)
    false = 0
    for left_out in group:
        os.environ[EXCLUDE_ENV] = left_out
        try:
            matches = confirmed_matches(candidate, question, for_candidate(LAYER, candidate))
        finally:
            del os.environ[EXCLUDE_ENV]
        for match in matches:
            parts = match.get("mutants") or [match["mutant"]]
            named = combine(*parts).candidate if len(parts) > 1 else {k.name: k.candidate for k in _loaded()}[parts[0]]
            false += not same(mine, ask(named, answer, problem))
    return false


def cache_state() -> str:
    """Whether the catalogue's answers came from earlier runs: a warm cache makes the wall time no measure of
    the diagnosis's cost (CONFORMANCE_CACHE=0 turns it off)."""
    from conformance.diagnosis import answer_cache

    return f"answer cache in {answer_cache.cache_root()}" if answer_cache.enabled() else "answer cache off"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--triples", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng, start = random.Random(args.seed), time.time()
    names = numpy_mutants()
    groups = draws(names, 2, args.pairs, rng) + draws(names, 3, args.triples, rng)
    totals = {"exactly": 0, "partly": 0, "false": 0, "nothing": 0}
    loo_runs = loo_false = 0
    for group in groups:
        for label, (answer, problem, probe) in QUESTIONS.items():
            verdict = score(group, answer, problem, probe)
            if verdict is None:
                continue
            totals[verdict] += 1
            loo_runs += len(group)
            loo_false += leave_one_out(group, answer, problem, probe)
            if verdict != "exactly":
                print(f"  {verdict:8s} {' + '.join(group)} on the {label}")
    scored = sum(totals.values())
    print(f"draws: {len(groups)} ({args.pairs} pairs, {args.triples} triples, seed {args.seed}) of {len(names)}"
          f" NumPy mutants; (draw, question) pairs where every bug shows: {scored}")
    print("named exactly {exactly}, named partly {partly}, false naming {false}, nothing {nothing}".format(**totals))
    print(f"share named exactly: {totals['exactly'] / max(scored, 1):.1%}; false namings: {totals['false']}")
    print(f"leave-one-out (each bug of a draw left out of the catalogue): {loo_runs} runs, false namings {loo_false}")
    print(f"wall time: {time.time() - start:.0f} s ({cache_state()})")


if __name__ == "__main__":
    main()
