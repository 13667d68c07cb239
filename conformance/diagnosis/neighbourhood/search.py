"""Search the generated neighbourhood where a failing question points, and confirm on problems drawn after it.

``formula_differences(asked)``: for a failing question that no known bug explains (``measurements.confirm.Asked``:
the candidate's and the paper's answers on the failing problem and a second one), the neighbours of the formulas the
question reaches (those whose screen touched a part the question calls) are asked the failing problem; those that
answer as the candidate are asked the second problem (where they must answer as the candidate, and not as the
paper), then a third problem drawn after the search (``third_problem``: other sizes, fresh values), where each
finalist must still answer as the candidate: a guard against the many comparisons a search makes. Finalists that
answer alike on all three are a tie and are said so ("equally: A or B"). A degenerate answer confirms nothing.
"""

from __future__ import annotations

import functools
import json
import time
import weakref

import numpy as np

from conformance.diagnosis.catalogue import named
from conformance.diagnosis.degenerate import degenerate
from conformance.diagnosis.matching import _answer, _costlier, _distance, known_answer
from conformance.diagnosis.neighbourhood.generate import PATH, build, mutated_source, stale
from conformance.diagnosis.neighbourhood.words import statement

# The screen problems (``generate._battery``) that show a deviation in each part a question may call.
PART_SCREENS = {
    "positional_encoding": ("positional_encoding",),
    "layer_norm": ("layer_norm",),
    "scaled_dot_product_attention": ("scaled_dot_product_attention",),
    "multi_head_attention": ("multi_head_attention", "masked_self_attention"),
    "feed_forward": ("feed_forward",),
    "encoder_layer": ("encoder_layer",),
    "decoder_layer": ("decoder_layer",),
    "attention_sublayer": ("attention_sublayer",),
    "ffn_sublayer": ("ffn_sublayer",),
    "learning_rate": ("learning_rate",),
    "label_smoothed_loss": ("label_smoothed_loss",),
    "parameter_count": ("parameter_count",),
    "build_model": ("model_",),
}
MAX_SEARCH_SECONDS = 20.0  # a bound on one question's search (a model question at its largest)
# Forms of a tie: more than this many changes answering alike share only their result (a softmax without exp, a
# sublayer that reads its input, the sublayer's output left out: each makes attention add nothing where every key
# is hidden), and stated, each would be a false claim of what the code computes: the tie is not stated.
MAX_SHOWN = 3
# A neighbour's call that runs longer is abandoned: a mutated loop condition can loop for ever (a greedy decoder
# whose rows never all finish), where the paper's formulas answer the largest question asked in about a second.
NEIGHBOUR_TIMEOUT_S = 5.0


@functools.cache
def neighbourhood() -> tuple[dict, ...]:
    """The neighbours of ``neighbours.json``; none when the file is stale (the search then states nothing)."""
    if stale() is not None:
        return ()
    return tuple(json.loads(PATH.read_text(encoding="utf-8"))["neighbours"])


@functools.cache
def neighbour_candidate(neighbour_id: str):
    """One neighbour as a candidate of the catalogue (its answers kept on disk under its id)."""
    from conformance.boundary.candidate import Candidate

    found = next(n for n in neighbourhood() if n["id"] == neighbour_id)
    form = found["forms"][0]
    adapter = build(found["owner"], found["formula"], mutated_source(found["owner"], found["formula"], form),
                    form.get("at"))
    return named(Candidate(adapter, name=f"neighbour:{neighbour_id}", timeout_s=NEIGHBOUR_TIMEOUT_S),
                 f"neighbour:{neighbour_id}")


def reached(parts: set) -> list[dict]:
    """The neighbours whose deviation the screen saw in a part the question calls."""
    screens = tuple(screen for part in parts for screen in PART_SCREENS.get(part, ()))
    if not screens:
        return []
    return [n for n in neighbourhood() if any(s.startswith(screens) for s in n["screen"])]


def formula_differences(asked, *, deadline_s: float = MAX_SEARCH_SECONDS) -> list[dict]:
    """The confirmed neighbours of this failing question, as descriptions (``as_description``), ties as one. A
    model's question first asks the neighbours of the candidate's model profile (``model_profile``), and searches
    every neighbour (with a smaller budget) only when none of those answers as the candidate."""
    if asked.candidate.conventions.dtype not in ("float32", "float64", None):
        return []  # a half dtype's rounding is not the paper's float64: no neighbour reproduces it exactly
    if "build_model" in asked.parts:
        profile = model_profile(asked.candidate, asked.disk_cache)
        if profile:
            found = _confirmed(asked, profile, deadline_s)
            if found:
                return found
            deadline_s = PROFILED_SEARCH_SECONDS
    return _confirmed(asked, reached(asked.parts), deadline_s)


# A model question costs a model's run per neighbour, and a failing model fails many checks: the whole model
# neighbourhood is searched once per candidate, on one fixed question (its logits on a small padded problem), and the
# neighbours confirmed there are what every model question asks first. The profile depends on the candidate only,
# never on which check failed first.
PROFILED_SEARCH_SECONDS = 5.0
_MODEL_PROFILES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def model_profile(candidate, disk_cache: bool = True) -> list[dict]:
    """The neighbours confirmed on the candidate's logits on one fixed model problem (empty when its logits there
    are the paper's, or nothing reproduces them)."""
    if candidate in _MODEL_PROFILES:
        return _MODEL_PROFILES[candidate]
    _MODEL_PROFILES[candidate] = []
    from conformance.diagnosis.measurements.confirm import Asked
    from conformance.diagnosis.question import Question, profile_problem
    from conformance.problems import questions
    from conformance.tolerances import MODEL, for_dtype

    sizes = profile_problem()
    try:
        asked = Asked.of(candidate, Question(questions.logits, sizes), for_dtype(MODEL, candidate.conventions.dtype),
                         disk_cache=disk_cache)
        found = [] if asked is None else _confirmed(asked, reached({"build_model"}), MAX_SEARCH_SECONDS)
    except Exception:  # noqa: BLE001 - a model that cannot answer has no profile
        found = []
    ids = {form["neighbour"] for description in found for form in description["facts"]["forms"]}
    _MODEL_PROFILES[candidate] = [n for n in neighbourhood() if n["id"] in ids]
    return _MODEL_PROFILES[candidate]


def _confirmed(asked, neighbours: list[dict], deadline_s: float) -> list[dict]:
    """Of ``neighbours``, those that answer as the candidate on the failing and the second problem, confirmed on
    a third drawn now; as descriptions."""
    start, finalists = time.monotonic(), []
    second_first = _costlier(asked.problem, asked.second)  # a base-size check: the small problem rules out most
    for neighbour in neighbours:
        if time.monotonic() - start > deadline_s:
            break
        try:
            candidate = neighbour_candidate(neighbour["id"])
        except Exception:  # noqa: BLE001 - a neighbour that does not build states nothing
            continue
        confirmed = _reproduces(asked, candidate, second_first)
        if confirmed is not None and _agrees_on_variants(asked, candidate):
            finalists.append((neighbour, candidate, confirmed))
    if not finalists:
        return []
    drawn = third_problem(asked.second)
    if drawn is None:  # a question of a kind no third problem can be drawn for: confirmed on two, as a name is
        return _ties([(n, _answer(asked.question, c, asked.second), here, there, there)
                      for n, c, (here, there) in finalists], problems=2)
    third = asked.candidate.fit(drawn)
    mine = _answer(asked.question, asked.candidate, third)
    paper = known_answer(asked.question, _paper(asked), third, disk_cache=asked.disk_cache)
    if mine is None or paper is None or degenerate(mine, paper) or asked.same(mine, paper):
        return []  # the third problem shows nothing: no finalist can be confirmed on it
    kept = []
    for neighbour, candidate, (here, there) in finalists:
        theirs = known_answer(asked.question, candidate, third, disk_cache=asked.disk_cache)
        if asked.same(mine, theirs):
            kept.append((neighbour, theirs, here, there, _distance(mine, theirs)))
    return _ties(kept)


def _agrees_on_variants(asked, neighbour) -> bool:
    """The neighbour answers each of the question's variants the candidate builds as the candidate does
    (``Question.variants``: a count's term that gives the difference only at the flags asked is not the change)."""
    for variant in asked.question.variants:
        problem = asked.candidate.fit(variant)
        if problem == asked.problem:
            continue
        mine = _answer(asked.question, asked.candidate, problem)
        if mine is None:
            continue
        theirs = known_answer(asked.question, neighbour, problem, disk_cache=asked.disk_cache)
        if theirs is None or not asked.same(mine, theirs):
            return False
    return True


def _reproduces(asked, candidate, second_first: bool) -> tuple[float, float] | None:
    """``asked.reproduces``, asking the cheaper problem first: (max diff on the failing problem, on the second)."""
    if not second_first:
        return asked.reproduces(candidate)
    there = known_answer(asked.question, candidate, asked.second, disk_cache=asked.disk_cache)
    if not asked.same(asked.mine_second, there) or asked.same(there, asked.paper_second):
        return None
    here = known_answer(asked.question, candidate, asked.problem, disk_cache=asked.disk_cache)
    if not asked.same(asked.mine, here) or not asked.answers_the_whole_call(candidate):
        return None
    return _distance(asked.mine, here), _distance(asked.mine_second, there)


def third_problem(second):
    """A problem drawn after the search, of the second problem's kind, other sizes and values; None for a kind
    this does not know (the schedule's points: the second problem holds both the warm-up and the decay)."""
    from conformance.config import ModelConfig
    from conformance.diagnosis.counts import third_size
    from conformance.diagnosis.question import PROBE_SEED, probe_of
    from conformance.problems.scenarios import SmoothedLossProblem

    drawn = probe_of(second)
    if drawn is not None:
        return drawn
    if isinstance(second, ModelConfig):  # a parameter count: every size other than the two asked
        return third_size(second)
    if isinstance(second, SmoothedLossProblem):
        rng = np.random.default_rng(PROBE_SEED + 3)
        n, v = second.logits.shape[0] + 3, second.logits.shape[1] + 4
        targets = rng.integers(0, v, n)
        targets[0] = (second.pad_id + 1) % v
        targets[rng.random(n) < 0.25] = second.pad_id
        return SmoothedLossProblem(rng.normal(0, 2.0, (n, v)), targets, 0.2, second.pad_id)
    if isinstance(second, dict) and isinstance(second.get("seed"), int):
        return {**second, "seed": second["seed"] + PROBE_SEED,
                **{k: v + 2 for k, v in second.items() if k != "seed" and isinstance(v, int) and v > 1}}
    if isinstance(second, tuple) and len(second) == 2 and all(isinstance(v, int) for v in second):
        return (second[0] + 7, second[1] + 8)  # a positional table: more rows, wider (still even)
    return None


def _paper(asked):
    from conformance.diagnosis.measurements.confirm import paper_for_description

    return paper_for_description(asked.candidate)


def _ties(kept: list, problems: int = 3) -> list[dict]:
    """One description for every finalist; finalists that answer alike on the last problem as one tie."""
    if not kept:
        return []
    groups: list[list] = []
    for item in sorted(kept, key=lambda item: (item[4], item[0]["id"])):
        for group in groups:
            if np.shape(group[0][1]) == np.shape(item[1]) and np.allclose(group[0][1], item[1], rtol=1e-9,
                                                                           atol=1e-12):
                group.append(item)
                break
        else:
            groups.append([item])
    forms = _simplest([form for group in groups for neighbour, *_ in group for form in _forms(neighbour)])
    if len(forms) > MAX_SHOWN:
        return []  # many changes answer alike: what they share is a collapse, not one change to state
    neighbours = [neighbour for group in groups for neighbour, *_ in group]
    best = groups[0][0]
    return [_description(neighbours, forms, best[2], best[3], best[4], problems)]


def _simplest(forms: list[dict]) -> list[dict]:
    """The forms less those confined to one call site where the same change everywhere answers alike: what was asked
    reaches only that call site, so the two are one computation there, and the plain form is the simpler to read."""
    general = {form["key"] for form in forms if not form.get("at")}
    return [form for form in forms if not (form.get("at") and form["key"] in general)]


def _forms(neighbour: dict) -> list[dict]:
    return [{**form, "formula": neighbour["formula"], "section": neighbour["section"], "neighbour": neighbour["id"]}
            for form in neighbour["forms"]]


def _description(neighbours: list[dict], forms: list[dict], here: float, there: float, third: float,
                 problems: int) -> dict:
    from conformance.diagnosis.measurements.base import as_description

    statements = [statement(form) for form in forms]
    text = statements[0] if len(statements) == 1 else "equally, on every problem asked: " + "; or ".join(statements)
    key = "formula:" + "|".join(sorted(n["id"] for n in neighbours))
    description = as_description("generated_neighbourhood", "formula", text, key, max_abs=here, probe_max_abs=there,
                                 facts={"problems": problems, "last_max_abs": third,
                                        "forms": [_plain_form(f) for f in forms[:10]]})
    return description


def _plain_form(form: dict) -> dict:
    return {k: form[k] for k in ("neighbour", "formula", "section", "family", "words", "paper", "found",
                                 "paper_piece", "found_piece", "at") if k in form}


