"""Which known bug the candidate's wrong answer is: rerun the question on every mutant, confirm on a probe."""

from __future__ import annotations

import itertools
import weakref
from collections import OrderedDict

import numpy as np

from conformance.compare import measure
from conformance.diagnosis import answer_cache
from conformance.diagnosis.catalogue import catalogue_dtype, catalogue_name, known_bugs, numpy_paper, paper
from conformance.diagnosis.degenerate import degenerate
from conformance.diagnosis.question import Question
from conformance.tolerances import Tolerance


def known_bugs_for(candidate) -> list:
    """The catalogue a candidate's failure is matched against: in its half dtype (``catalogue_dtype``), or each
    mutant's own."""
    dtype = catalogue_dtype(candidate)
    return known_bugs() if dtype is None else known_bugs(dtype)


def paper_for(candidate):
    """The paper's answer for a candidate: the reference in its half dtype; for a float64 candidate the NumPy
    implementation (float64), as a description is judged (``paper_for_description``): the float32 reference's
    rounding is beyond a float64 tolerance, so a float64 candidate right where the question looks would seem wrong
    there, and every float64 known bug that leaves that part alone would be 'confirmed'; else ``paper()``."""
    from conformance.diagnosis.catalogue import numpy_paper

    dtype = catalogue_dtype(candidate)
    if dtype is not None:
        return paper(dtype)
    if getattr(getattr(candidate, "conventions", None), "dtype", None) == "float64" and numpy_paper() is not None:
        return numpy_paper()
    return paper()


def _answer(question: Question, candidate, problem=None) -> np.ndarray | None:
    try:
        return question.ask(candidate, problem)
    except Exception:  # noqa: BLE001 - a candidate that cannot answer this question explains nothing here
        return None


# The catalogue's answers, kept per (known candidate, question, problem): a mutant's answer depends on nothing
# else, and the same questions come back (the trained checkpoint's second batch in three checks, the paper's
# answer on every probe, and in one process the same failing problems for every candidate certified).
ANSWERS_KEPT = 4096
_kept: OrderedDict = OrderedDict()


class _Uncacheable(Exception):
    pass


def _problem_key(problem):
    """A hashable key equal for equal problems: arrays by dtype, shape and bytes; tuples element by element."""
    if isinstance(problem, np.ndarray):
        return ("ndarray", problem.dtype.str, problem.shape, problem.tobytes())
    if isinstance(problem, (tuple, list)):
        return (type(problem).__name__, *(_problem_key(item) for item in problem))
    try:
        hash(problem)
    except TypeError:
        raise _Uncacheable from None
    return (type(problem).__name__, problem)


def known_answer(question: Question, known, problem, *, disk_cache: bool) -> np.ndarray | None:
    """``_answer`` for a candidate of the catalogue (a mutant, a combination, the paper), kept: asked again with
    an equal problem it is not rerun. Never for the candidate under diagnosis (it may be anything). ``disk_cache``:
    the run reads and writes the answers kept on disk (``answer_cache``), and trusts those read earlier."""
    disk_cache = disk_cache and answer_cache.enabled()
    try:
        key = (id(known), question.answer, _problem_key(problem))
        hash(key)
    except (_Uncacheable, TypeError):
        return _answer(question, known, problem)
    if key in _kept and (disk_cache or not _kept[key][2]):
        _kept.move_to_end(key)
        return _kept[key][1]
    answer, read = _stored_or_answered(question, known, problem, key[2]) if disk_cache \
        else (_answer(question, known, problem), False)
    if answer is not None:
        answer.setflags(write=False)  # shared by every later asker
    # The candidate held: its id cannot be reused while the entry lives. An answer read from disk is not
    # trusted by a later run of this process with the cache off (grade).
    _kept[key] = (known, answer, read)
    if len(_kept) > ANSWERS_KEPT:
        _kept.popitem(last=False)
    return answer


def _stored_or_answered(question: Question, known, problem, problem_key) -> tuple[np.ndarray | None, bool]:
    """``_answer``, read from the answers kept on disk by an earlier run when there is one (``answer_cache``),
    else computed and written there; and whether it was read. Only for the catalogue's own members, named by
    it, and questions and problems that another process would name the same."""
    name = catalogue_name(known)
    if name is None:
        return _answer(question, known, problem), False
    try:
        key = answer_cache.entry_key(name, question.answer, problem_key)
    except answer_cache.Uncacheable:
        return _answer(question, known, problem), False
    found, answer = answer_cache.read(key)
    if not found:
        answer = _answer(question, known, problem)
        answer_cache.write(key, answer)
    return answer, found


def answers_vary(candidate, question: Question) -> bool:
    """The candidate answers the failing question twice, differently: no comparison with the paper (nor with a
    known bug) means anything then."""
    problem = candidate.fit(question.problem)
    first, second = question.ask(candidate, problem), question.ask(candidate, problem)
    return first.shape == second.shape and not np.array_equal(first, second, equal_nan=True)


def agrees(actual, expected, tol: Tolerance) -> bool:
    """Same shape and every value within ``tol``; a NaN on either side never agrees."""
    return actual is not None and expected is not None and np.shape(actual) == np.shape(expected) \
        and measure(actual, expected, tol).passed


def _same(question: Question, tol: Tolerance):
    """How this question judges two answers the same: its own ``agree``, or elementwise within ``tol``."""
    if question.agree is None:
        return lambda a, b: agrees(a, b, tol)
    return lambda a, b: (a is not None and b is not None and np.shape(a) == np.shape(b)
                         and bool(np.isfinite(a).all() and np.isfinite(b).all()) and question.agree(a, b))


def _distance(a, b) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b)).max()) if np.size(a) else 0.0


def confirmed_matches(candidate, question: Question, tol: Tolerance, *, actual=None,
                      disk_cache: bool = True, profile: frozenset | None = None) -> list[dict]:
    """The known bugs whose answer equals the candidate's on the failing problem and on a second one where
    they differ from the paper's: [{mutant, bug, max_abs, probe_max_abs}], closest first. When no single bug
    is confirmed, the combinations of known bugs (``combined_matches``): {mutant: "a+b", mutants: [a, b], ...},
    starting from ``profile`` (by default the candidate's, ``_profile``)."""
    problem = candidate.fit(question.problem)  # every candidate is asked exactly what this one was
    mine = _answer(question, candidate, problem) if actual is None else np.asarray(actual, np.float64)
    if mine is None or not np.isfinite(mine).all():
        return []
    same = _same(question, tol)
    second = _Second(candidate, question, same, disk_cache)
    if not second.ready():
        return []  # right on the second problem: neither a single bug nor a combination can be confirmed
    known = known_bugs_for(candidate)
    if _costlier(problem, second.problem):  # a base-size question: ask it only of the mutants the probe keeps
        confirmed, asked = _confirm_probe_first(second, problem, mine, known)
    else:
        asked = {bug.name: known_answer(question, bug.candidate, problem, disk_cache=disk_cache) for bug in known}
        first = [(bug, _distance(mine, asked[bug.name])) for bug in known if same(mine, asked[bug.name])]
        confirmed = _confirm(second, first) if first else []
    whole = _WholeCall(candidate, question, tol, (problem, second.problem))
    variants = _Variants(candidate, question, same, disk_cache)
    confirmed = [match for match in confirmed if whole.agrees(match) and variants.agree(match)]
    if confirmed:
        return confirmed
    answers = [(bug, asked[bug.name] if bug.name in asked
                else known_answer(question, bug.candidate, problem, disk_cache=disk_cache)) for bug in known]
    combined = combined_matches(second, problem, mine, answers,
                                profile=_profile(candidate, disk_cache) if profile is None else profile)
    return [match for match in combined if whole.agrees(match) and variants.agree(match)]


class _Variants:
    """``Question.variants``: does a matched bug answer the question's other kinds of problem as the candidate does?
    A variant the candidate cannot answer (a configuration it does not build) takes nothing from the match."""

    def __init__(self, candidate, question: Question, same, disk_cache: bool = True):
        self.candidate, self.question, self.same, self.disk_cache = candidate, question, same, disk_cache
        self._mine = None

    def agree(self, match: dict) -> bool:
        if not self.question.variants:
            return True
        known = _catalogue_member(match, self.candidate)
        if known is None:
            return True
        if self._mine is None:
            problems = []
            for problem in (self.candidate.fit(p) for p in self.question.variants):
                if all(problem != seen for seen in problems):  # a variant the candidate does not build: fitted back
                    problems.append(problem)
            self._mine = [(problem, _answer(self.question, self.candidate, problem)) for problem in problems]
        for problem, mine in self._mine:
            if mine is None:
                continue
            try:
                theirs = known_answer(self.question, known.candidate, problem, disk_cache=self.disk_cache)
            except Exception:  # noqa: BLE001 - a known bug that cannot answer the variant is not this candidate
                return False
            if theirs is None or not self.same(mine, theirs):
                return False
        return True


class _WholeCall:
    """Where the question asks one part of a call's return (``Question.whole``): does a matched bug return the
    whole call as the candidate does, on the failing problem and the second? Attention that returns its weights
    unmasked but masks its output matches attention_mask_ignored on the weights alone: that bug is not this one."""

    def __init__(self, candidate, question: Question, tol: Tolerance, problems):
        self.candidate, self.question, self.tol, self.problems = candidate, question, tol, problems
        self._mine = None

    def agrees(self, match: dict) -> bool:
        if self.question.whole is None:
            return True
        known = _catalogue_member(match, self.candidate)
        if known is None:
            return True
        try:
            if self._mine is None:
                self._mine = [self.question.ask_whole(self.candidate, problem) for problem in self.problems]
            theirs = [self.question.ask_whole(known.candidate, problem) for problem in self.problems]
        except Exception:  # noqa: BLE001 - a whole call that cannot be asked takes nothing from the part's match
            return True
        return all(wholes_agree(a, b, self.tol) for a, b in zip(self._mine, theirs, strict=True))


def wholes_agree(mine: list, theirs: list, tol: Tolerance, *, leaving: int | None = None) -> bool:
    """Two whole answers of one call (``Question.ask_whole``) agree part by part (``leaving`` one part out)."""
    return len(mine) == len(theirs) and all(agrees(a, b, tol) for i, (a, b) in enumerate(zip(mine, theirs,
                                                                                              strict=True))
                                            if i != leaving)


def offered(candidate, question: Question, tol: Tolerance, matches: list[dict], *,
            disk_cache: bool = True) -> list[dict]:
    """The matches a failure's message offers: the confirmed cause (the closest match), then each alternative
    whose answer differs from the cause's somewhere this question can show it (the failing problem, the second
    one, or a third drawn as the second is). An alternative that answers as the cause wherever this question
    looks differs from it only where this call cannot show: a causal mask on an encoder's call (attention_mask_ignored
    beside padding_mask_ignored), padded query rows on a call without them. Offered, it would name a bug the call
    gives no evidence of. ``matches`` itself (the report's diagnosis) is left whole: each still matches."""
    if len(matches) < 2:
        return matches
    same = _same(question, tol)
    cause = _catalogue_member(matches[0], candidate)
    problems = [candidate.fit(problem) for problem in _problems_of(question)]
    if cause is None or not problems:
        return matches

    def shows_a_difference(match: dict) -> bool:
        other = _catalogue_member(match, candidate)
        return other is None or any(not same(known_answer(question, cause.candidate, problem, disk_cache=disk_cache),
                                             known_answer(question, other.candidate, problem, disk_cache=disk_cache))
                                    for problem in problems)

    return [matches[0], *(match for match in matches[1:] if shows_a_difference(match))]


def _problems_of(question: Question) -> list:
    """The problems a question is asked on: the failing one, the second, and a third drawn as the second is."""
    from conformance.diagnosis.question import probe_of

    second = question.second()
    return [problem for problem in (question.problem, second, probe_of(second)) if problem is not None]


def _catalogue_member(match: dict, candidate=None):
    """The known bug (or combination of known bugs) a diagnosis match names; None when it is gone."""
    from conformance.diagnosis.combine import combination

    if match.get("mutants"):
        return combination(tuple(sorted(match["mutants"])))
    return next((bug for bug in known_bugs_for(candidate) if bug.name == match["mutant"]), None)


class _Second:
    """The second problem, and the candidate's and the paper's answers there, computed once when first needed."""

    def __init__(self, candidate, question: Question, same, disk_cache: bool = True):
        self.candidate, self.question, self.same, self.disk_cache = candidate, question, same, disk_cache
        self._asked = False
        self.problem = self.mine = self.correct = None

    def ready(self) -> bool:
        """False when there is no second problem, or the candidate is right on it: nothing can be confirmed."""
        if not self._asked:
            self._asked = True
            second, reference = self.question.second(), paper_for(self.candidate)
            if second is not None and reference is not None:
                self.problem = self.candidate.fit(second)
                self.mine = _answer(self.question, self.candidate, self.problem)
                self.correct = known_answer(self.question, reference, self.problem, disk_cache=self.disk_cache)
        # A collapsed answer here confirms nothing, whatever matches it: every bug that collapses the same way
        # does (a decoding of nothing but padding). The failing problem is drawn, not chosen, and may be too
        # small to be anything but degenerate (one query: every softmax gives weight 1); this one is built not to.
        return not (self.mine is None or self.correct is None or self.same(self.mine, self.correct)
                    or degenerate(self.mine, self.correct) is not None)

    def confirms(self, known) -> float | None:
        """``known``'s distance from the candidate on the second problem when it matches there and differs
        from the paper's; else None."""
        theirs = known_answer(self.question, known.candidate, self.problem, disk_cache=self.disk_cache)
        if self.same(self.mine, theirs) and not self.same(theirs, self.correct):
            return _distance(self.mine, theirs)
        return None


def _cost(problem) -> int | None:
    """Roughly the multiply-adds one answer to ``problem`` takes (a layer or a model problem), else None."""
    from conformance.problems.scenarios import LayerSizes, ModelSizes

    if isinstance(problem, LayerSizes):
        return problem.B * max(problem.S, problem.T) * problem.d_model * max(problem.d_model, problem.d_ff)
    if isinstance(problem, ModelSizes):
        c = problem.config
        return problem.B * max(problem.S, problem.T) * (c.N * c.d_model * max(c.d_model, c.d_ff)
                                                         + c.d_model * max(c.src_vocab, c.tgt_vocab))
    return None


def _costlier(problem, probe) -> bool:
    """The failing problem costs more to answer than the second one (a base-size check's d_model 512)."""
    cost, probe_cost = _cost(problem), _cost(probe)
    return cost is not None and probe_cost is not None and cost > probe_cost


def _confirm_probe_first(second: _Second, problem, mine, known) -> tuple[list[dict], dict]:
    """What ``_confirm`` finds, asking the second (cheap) problem first: a known bug is confirmed only when it
    matches on both, so the costly failing problem is asked only of the bugs the second one keeps. Returns
    the confirmed matches and the answers on the failing problem asked so far, by name."""
    asked, confirmed = {}, []
    for bug in known:
        probe_max_abs = second.confirms(bug)
        if probe_max_abs is None:
            continue
        theirs = asked[bug.name] = known_answer(second.question, bug.candidate, problem, disk_cache=second.disk_cache)
        if second.same(mine, theirs):
            confirmed.append({"mutant": bug.name, "bug": bug.bug, "max_abs": _distance(mine, theirs),
                              "probe_max_abs": probe_max_abs})
    return sorted(confirmed, key=lambda match: match["max_abs"]), asked


def _confirm(second: _Second, first) -> list[dict]:
    confirmed = []  # the caller saw second.ready(): the candidate is wrong on the second problem too
    for known, max_abs in first:
        probe_max_abs = second.confirms(known)
        if probe_max_abs is not None:
            confirmed.append({"mutant": known.name, "bug": known.bug, "max_abs": max_abs,
                              "probe_max_abs": probe_max_abs})
    return sorted(confirmed, key=lambda match: match["max_abs"])


# --------------------------------------------------------------------------------------------------
# Several bugs at once
# --------------------------------------------------------------------------------------------------
# A search over compositions of single bugs (``combine``), cheapest guesses first, each stage confirmed
# before the next: (0) the candidate's profile (``_profile``: what its fixed ladder of questions, from its parts
# to its logits, is confirmed to be): its combinations, alone and each with one more bug, then its single bugs
# each with one more (PROFILE_SINGLE_PAIRS at most); (1) pairs among the TOP_SINGLES closest singles; (2) the
# ANCHORS closest singles, each with every other single it composes with (a bug that dominates the output hides
# a weak partner deep in the ranking); (3) the TRIPLE_SEEDS closest unconfirmed pairs, each extended by one of
# the TOP_SINGLES. Every composed candidate asked is a rerun of the question; MAX_RERUNS bounds them per failing
# check, confirmations on the second problem included (60 layer or small-model runs: about a second in torch).
# The profile is asked once per candidate, on fixed questions: what another check confirmed never reorders the
# search, so a failure's explanation does not depend on which checks ran before it.
TOP_SINGLES = 6
ANCHORS = 2
TRIPLE_SEEDS = 3
MAX_RERUNS = 60
PROFILE_SINGLE_PAIRS = 30  # pairs tried for the profile's single bugs: half the reruns at most


def closest_singles(mine, papers, same, answers) -> list:
    """The known bugs whose answer on the failing problem differs from the paper's (one that gives the
    paper's answer says nothing), closest first: the most aligned deviations from the paper. To first
    order a combination's deviation is the sum of its bugs', so each bug's deviation points roughly
    where the candidate's does (the cosine ranks them; the max abs difference breaks ties)."""
    correct = papers[0]
    scored = []
    for known, theirs in answers:
        if theirs is None or np.shape(theirs) != np.shape(mine) or not np.isfinite(theirs).all():
            continue  # an error, a NaN or another shape: not part of what the candidate computes
        if any(same(theirs, answer) for answer in papers):
            continue
        scored.append((-_alignment(mine - correct, theirs - correct), _distance(mine, theirs), known.name, known))
    return [known for *_, known in sorted(scored, key=lambda item: item[:3])]


def _alignment(a, b) -> float:
    """The cosine between two deviations (0 when either is 0)."""
    a, b = np.ravel(a), np.ravel(b)
    norms = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / norms if norms > 0 else 0.0


def _papers(question: Question, problem, disk_cache: bool, candidate=None) -> list:
    """The paper's answers on ``problem``: the reference's (in the candidate's half dtype), and the NumPy
    implementation's (float64), which the NumPy mutants are built on: a mutant that gives either one says nothing."""
    answers = [known_answer(question, reference, problem, disk_cache=disk_cache)
               for reference in (paper_for(candidate), numpy_paper()) if reference]
    return [answer for answer in answers if answer is not None]


def combined_matches(second: _Second, problem, mine, answers, *, profile: set = frozenset()) -> list[dict]:
    """Combinations of known bugs (``combine``) whose answer equals the candidate's on the failing problem
    and on the second one, where they differ from the paper's; the first stage that confirms one ends the
    search. Never more than MAX_RERUNS questions asked of composed candidates."""
    papers = _papers(second.question, problem, second.disk_cache, second.candidate)
    if not papers:
        return []
    ranked = [known.name for known in closest_singles(mine, papers, second.same, answers)]
    search = _CombinationSearch(second, problem, mine)
    top = ranked[:TOP_SINGLES]
    known = {bug.name for bug, _ in answers}  # the catalogue of this search: a left-out bug stays out
    profile = {names for names in profile if set(names) <= known}
    combined, singles = {names for names in profile if len(names) > 1}, sorted(n for n in profile if len(n) == 1)
    # Single bugs that answer like the candidate here were refuted by the second problem: seeds for the stage
    # that adds what this problem cannot show.
    search.refuted += [(_distance(mine, theirs), (bug.name,)) for bug, theirs in answers
                       if theirs is not None and np.shape(theirs) == np.shape(mine) and second.same(mine, theirs)]
    stages = (
        lambda: itertools.chain(combined, ((*names, name) for names in sorted(combined) for name in ranked
                                           if name not in names)),
        # A single bug of the profile with one more that only this problem shows (Marian's sines-then-cosines,
        # confirmed on its logits, with the finite fill an empty source shows).
        lambda: itertools.islice(((*names, name) for names in singles for name in ranked if name not in names),
                                 PROFILE_SINGLE_PAIRS),
        lambda: itertools.combinations(top, 2),
        lambda: ((anchor, other) for anchor in ranked[:ANCHORS] for other in ranked if other != anchor),
        lambda: ((*combo.names, name) for combo in search.closest_misses(TRIPLE_SEEDS) for name in top
                 if name not in combo.names),
    )
    found = []
    for stage in stages:
        found = search.confirmed(search.ask(stage())) or _seen_only_by_the_second(search, papers, answers)
        if found:
            break
    return found


def _seen_only_by_the_second(search: _CombinationSearch, papers, answers) -> list[dict]:
    """The matches on the failing problem that the second problem refuted, each with one more bug the failing
    problem cannot show (its answer there is the paper's), ranked by how well it explains what the match leaves
    unexplained on the second problem. FSMT's positional encoding: a one-token source matches three of its
    deviations, the second problem's padded source needs the fourth (no encoding at padded positions)."""
    from conformance.diagnosis.combine import combination

    seeds = [names for _, names in sorted(search.refuted)[:TRIPLE_SEEDS]]
    search.refuted.clear()  # each seed is extended once; what the extensions leave refuted is not extended
    if not seeds:
        return []
    second = search.second
    silent = [bug for bug, theirs in answers
              if theirs is not None and any(second.same(theirs, answer) for answer in papers)]
    on_second = [(bug, known_answer(second.question, bug.candidate, second.problem, disk_cache=second.disk_cache))
                 for bug in silent]
    singles = {bug.name: bug for bug, _ in answers}
    extended = []
    for names in seeds:
        seed = singles[names[0]] if len(names) == 1 else combination(tuple(sorted(names)))
        seeds_answer = None if seed is None else known_answer(second.question, seed.candidate, second.problem,
                                                              disk_cache=second.disk_cache)
        if seeds_answer is None or np.shape(seeds_answer) != np.shape(second.mine):
            continue
        ranked = _explaining(second.mine - seeds_answer, second.correct, on_second)
        extended += [(*names, name) for name in ranked[:TOP_SINGLES] if name not in names]
    found = search.confirmed(search.ask(extended))
    search.refuted.clear()
    return found


def _explaining(rest, correct, answers) -> list[str]:
    """The bugs whose deviation from the paper lies where ``rest`` (what a match leaves unexplained) lies, best
    first: by the overlap of the two deviations' supports (the entries that differ), then by their cosine. A
    bug that moves only a padded row explains a residual in that row; the cosine alone would rank first any bug
    that moves every row a little in the residual's direction."""
    rest = np.asarray(rest, np.float64)
    scale = float(np.abs(rest).max()) if rest.size else 0.0
    if scale == 0.0:
        return []
    where = np.abs(rest) > 1e-3 * scale
    scored = []
    for known, theirs in answers:
        if theirs is None or np.shape(theirs) != np.shape(rest) or not np.isfinite(theirs).all():
            continue
        moved = np.asarray(theirs, np.float64) - correct
        if not moved.any():
            continue
        theirs_where = np.abs(moved) > 1e-3 * float(np.abs(moved).max())
        overlap = (where & theirs_where).sum() / (where | theirs_where).sum()
        scored.append((-overlap, -_alignment(rest, moved), known.name))
    return [name for *_, name in sorted(scored)]


# candidate -> its profile: the known bugs (name tuples) confirmed on its fixed ladder of questions
_PROFILES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _profile(candidate, disk_cache: bool) -> set:
    """The known bugs (single or combined) confirmed on the candidate's profile ladder (``profile_ladder``: fixed
    questions from its parts to its logits, each rung's search starting from the rungs below), asked once per
    candidate whichever check asks first: the same for every failing check."""
    from conformance.diagnosis.question import profile_ladder
    from conformance.tolerances import for_candidate

    if candidate in _PROFILES:
        return _PROFILES[candidate]
    _PROFILES[candidate] = set()
    provides = getattr(candidate, "provides", None)  # a stand-in candidate (tests) has no parts to ask
    if provides is None:
        return set()
    profile: set = set()
    for part, question, table in profile_ladder(candidate):
        if not provides(part):
            continue
        try:
            matches = confirmed_matches(candidate, question, for_candidate(table, candidate), disk_cache=disk_cache,
                                        profile=frozenset(profile))
        except Exception:  # noqa: BLE001 - a part that cannot answer adds nothing to the profile
            matches = []
        profile |= {tuple(sorted(match.get("mutants") or [match["mutant"]])) for match in matches}
    _PROFILES[candidate] = profile
    return profile


class _CombinationSearch:
    """The combinations asked so far, what each answered on the failing problem, and the reruns left."""

    def __init__(self, second: _Second, problem, mine):
        self.second, self.problem, self.mine = second, problem, mine
        self.reruns_left = MAX_RERUNS
        self.asked: set[tuple[str, ...]] = set()
        self.misses: list[tuple[float, object]] = []  # (max abs difference, combination) that did not match
        self.refuted: list[tuple[float, tuple[str, ...]]] = []  # matched here, not on the second problem

    def ask(self, groups) -> list[tuple[float, object]]:
        """The combinations among ``groups`` (name tuples; those that do not compose skipped, for free) whose
        answer on the failing problem equals the candidate's, as (max abs difference, combination)."""
        from conformance.diagnosis.combine import combination

        matched = []
        for names in groups:
            combo = combination(tuple(sorted(names)))
            if combo is None or combo.names in self.asked:
                continue
            if self.reruns_left <= 0:
                break
            self.asked.add(combo.names)
            self.reruns_left -= 1
            theirs = known_answer(self.second.question, combo.candidate, self.problem,
                                  disk_cache=self.second.disk_cache)
            if theirs is None or np.shape(theirs) != np.shape(self.mine) or not np.isfinite(theirs).all():
                continue
            (matched if self.second.same(self.mine, theirs) else self.misses).append(
                (_distance(self.mine, theirs), combo))
        return matched

    def closest_misses(self, n: int) -> list:
        return [combo for _, combo in sorted(self.misses, key=lambda item: (item[0], item[1].names))[:n]]

    def confirmed(self, matched) -> list[dict]:
        """The matches also confirmed on the second problem: {mutant: "a+b", mutants: [a, b], bug, ...}."""
        if not matched:
            return []
        found = []
        for max_abs, combo in matched:
            if self.reruns_left <= 0:
                break
            self.reruns_left -= 1
            probe_max_abs = self.second.confirms(combo)
            if probe_max_abs is None:
                self.refuted.append((max_abs, combo.names))
                continue
            max_abs, combo, probe_max_abs = self._without_idle_parts(max_abs, combo, probe_max_abs)
            if all(match["mutant"] != combo.name for match in found):
                found.append({"mutant": combo.name, "mutants": list(combo.names), "bug": combo.bug,
                              "max_abs": max_abs, "probe_max_abs": probe_max_abs})
        return sorted(found, key=lambda match: (match["max_abs"], match["mutant"]))

    def _without_idle_parts(self, max_abs, combo, probe_max_abs):
        """The confirmed combination less every part whose removal changes neither answer: a bug that another
        one undoes (a causal mask in the encoder, once no causal mask is built at all) is not named."""
        from conformance.diagnosis.combine import combination

        shrunk = True
        while shrunk and len(combo.names) > 2:  # a pair's parts are singles, refuted before the search began
            shrunk = False
            for name in combo.names:
                smaller = combination(tuple(n for n in combo.names if n != name))
                if smaller is None or self.reruns_left <= 0:
                    continue
                self.reruns_left -= 1
                theirs = known_answer(self.second.question, smaller.candidate, self.problem,
                                      disk_cache=self.second.disk_cache)
                if theirs is None or np.shape(theirs) != np.shape(self.mine) or not self.second.same(self.mine, theirs):
                    continue
                probe = self.second.confirms(smaller)
                if probe is not None:
                    max_abs, combo, probe_max_abs, shrunk = _distance(self.mine, theirs), smaller, probe, True
                    break
        return max_abs, combo, probe_max_abs
