"""The pytest plugin (entry point ``pytest11: conformance``): checks parametrised by implementation.

``pytest --pyargs conformance.judging.checks --impl reference`` runs the catalogue against the reference;
``--impl`` may repeat. Without ``--impl`` the plugin stays inert, so it is safe in any project.

Statuses beyond pass/fail: a check whose part the adapter lacks is *not implemented*, a check whose
prerequisite (``@pytest.mark.depends_on("other_check")``, same module) did not pass is *blocked*;
both are reported as pytest skips and never count as failures. An adapter that raises, hangs or
returns garbage gives an *error* for that one check, and the run goes on.
"""

from __future__ import annotations

import contextlib
import functools
import re
import shlex
import shutil
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from conformance import provenance
from conformance.errors import BadOutput, Blocked, ConformanceOutcome, LoadError, PartNotImplemented
from conformance.judging import deviations
from conformance.paper import claims
from conformance.results import FAILING, CheckResult, plain
from conformance.run.runs import Run
from conformance.tolerances import HALF

RESULTS_KEY = "conformance"
RUN_KEY = "conformance_run"  # the run, in what pytest-xdist sends each worker


def pytest_addoption(parser):
    from conformance.run.options import add_pytest_options

    add_pytest_options(parser.getgroup("conformance", "transformer conformance"))


def pytest_configure(config):
    for line in (
        "requires(*parts): the adapter parts a check needs; missing parts make it not implemented",
        "judges(*aspects): what the verdict is about, when it is not every required part beyond building and"
        " loading a model (conformance.provenance): 'model.greedy_decode', 'model.train_step:loss'; a check whose"
        " judged aspects the suite's helpers supplied is 'supplied', not passed",
        "depends_on(check_id): a prerequisite check in the same module; if it did not pass, this one is blocked",
        "section(text): the paper section a check certifies, when it differs from its module's SECTION",
        "superseded_by(*parts): a check of a coarse part (attention_sublayer) that runs only where the candidate"
        " lacks these finer parts (multi_head_attention), whose own checks already judge it",
        "training: a training-convergence check (slow); deselect with --no-training",
        "half_precision: a hazard of float16 and bfloat16; runs only with --dtype float16 or bfloat16",
        "full_precision: judges differences below half precision's own noise; not run with --dtype float16|bfloat16",
        "claim(source, where, text): what the verdict rests on (conformance.paper.claims): the paper, a lesson, or a"
        " convention of the suite (advisory unless --conformance-strict)",
    ):
        config.addinivalue_line("markers", line)
    run = config.stash[_run_key] = run_of(config)
    if not run.impls:
        return
    run.publish(config)  # a check reading pytest's options reads the run's
    from conformance.boundary.loading import load
    from conformance.run.hypothesis_profiles import load_profile

    load_profile(run.options.profile)
    keep_hypothesis_files_out_of_the_working_directory(config)
    draw_examples_from_the_seed_alone()
    limit_torch_threads(run.options.threads)
    try:
        candidates = {spec: run.candidates[spec] if spec in run.candidates else load(spec, **run.load_options())
                      for spec in run.impls}
        if run.deviations is None:
            path = run.options.deviations
            run.deviations = deviations.load(path) if path else []
    except LoadError as exc:
        raise pytest.UsageError(str(exc)) from exc
    config.stash[_candidates_key] = candidates
    collector = next((p for p in config.pluginmanager.get_plugins() if isinstance(p, ResultCollector)), None)
    if collector is None:
        collector = ResultCollector()
        config.pluginmanager.register(collector, "conformance-collector")
    collector.bind(config, candidates)


def run_of(config) -> Run:
    """The run: the one the command line handed to ``pytest.main``, else the one pytest-xdist's controller sent
    this worker, else the one pytest's options describe (a plain ``pytest --impl ...``)."""
    handed = next((p for p in config.pluginmanager.get_plugins() if isinstance(p, Run)), None)
    if handed is not None:
        return handed
    sent = getattr(config, "workerinput", {}).get(RUN_KEY)
    return Run.from_plain(sent) if sent is not None else Run.from_pytest(config)


def the_run(config) -> Run:
    """The run of this session (``pytest_configure``); without an implementation named, the plugin is inert."""
    return config.stash[_run_key]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist's controller, starting a worker: the run goes along, as plain data (``Run.for_workers``)."""
    node.workerinput[RUN_KEY] = the_run(node.config).for_workers()


def pytest_unconfigure(config):
    from conformance.boundary.isolation.options import close

    close(config.stash.get(_candidates_key, {}).values())  # isolated workers end with the session


def keep_hypothesis_files_out_of_the_working_directory(config) -> None:
    """Hypothesis caches constants in ``./.hypothesis`` even without an example database; a certification
    run must leave nothing in the folder it was started from (often the candidate's), so the cache goes
    to a temporary folder removed at the end of the run."""
    import tempfile

    from hypothesis.configuration import set_hypothesis_home_dir

    from conformance.run.janitor import remove_after_exit

    home = remove_after_exit(tempfile.mkdtemp(prefix="conformance-hypothesis-"))  # under grade: even if killed
    set_hypothesis_home_dir(home)
    config.add_cleanup(lambda: (set_hypothesis_home_dir(None), shutil.rmtree(home, ignore_errors=True)))


def draw_examples_from_the_seed_alone() -> None:
    """Hypothesis mixes into its draws the literal constants of every local module imported so far, collected
    under a 100 ms time limit: the examples a check drew then depended on the candidate's source, on what
    else the process had imported (a mutant's verdict changed with the mutants certified before it in the
    same process) and on the machine's load. A verdict must follow from the check and the seed alone, so
    the pool of local constants is kept empty (an internal of hypothesis; where it is absent, nothing)."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:  # pragma: no cover - a hypothesis without local constants
        return
    if hasattr(providers, "_get_local_constants"):
        empty = Constants()
        providers._get_local_constants = lambda *args, **kwargs: empty


def limit_torch_threads(threads: int) -> None:
    """The checks' tensors are tiny: a second intra-op thread only waits on the first, and on a busy
    machine on other processes too (``python benchmarks/catalogue.py`` measures both). Applies to the
    candidate too: it runs in this process."""
    if threads <= 0:
        return
    try:
        import torch
    except ImportError:  # a NumPy-only candidate on a machine without torch
        return
    torch.set_num_threads(threads)


_run_key = pytest.StashKey[Run]()
_candidates_key = pytest.StashKey[dict]()
_outcomes_key = pytest.StashKey[dict]()


def pytest_generate_tests(metafunc):
    if "candidate" not in metafunc.fixturenames:
        return
    specs = the_run(metafunc.config).impls
    if not specs:
        metafunc.parametrize("candidate", [pytest.param(None, marks=pytest.mark.skip(reason="no --impl given"))])
        return
    metafunc.parametrize("candidate", specs, indirect=True, scope="session", ids=specs)


@pytest.fixture(scope="session")
def candidate(request):
    return request.config.stash[_candidates_key][request.param]


@pytest.fixture
def rng(request) -> np.random.Generator:
    """Random inputs that depend only on --conformance-seed and the check, not on run order."""
    seed = the_run(request.config).options.seed
    return np.random.default_rng([seed, *check_id(request.node).encode()])


@pytest.fixture
def check(request, candidate):
    """The check's recorder and explainer (``conformance.judging.check.Check``): comparisons, claims, data."""
    from conformance.judging.check import Check

    options = the_run(request.config).options
    recorder = Check(candidate, diagnose=not options.no_diagnosis, disk_cache=not options.no_cache,
                     check_id=check_id(request.node))
    request.node.stash[_recorder_key] = recorder
    return recorder


_recorder_key = pytest.StashKey["Check"]()


def check_id(item) -> str:
    """``test_pe_values_at_positions_1_and_2[reference]`` -> ``pe_values_at_positions_1_and_2``."""
    name = getattr(item, "originalname", None) or item.name
    params = getattr(getattr(item, "callspec", None), "params", {})
    extra = [f"{k}={v}" for k, v in params.items() if k != "candidate"]
    return name.removeprefix("test_") + (f"[{','.join(extra)}]" if extra else "")


def check_section(item) -> str:
    marker = item.get_closest_marker("section")
    if marker:
        return marker.args[0]
    return getattr(item.module, "SECTION", "") if getattr(item, "module", None) else ""


def check_title(item) -> str:
    doc = getattr(getattr(item, "function", None), "__doc__", None) or ""
    return doc.strip().splitlines()[0] if doc.strip() else check_id(item)


class Examples:
    """How many examples of a property check ran, and how many were skipped because the candidate could
    not build their configuration (declared or raised ``NotImplementedError``), with the reasons."""

    def __init__(self):
        self.ran, self.skipped, self.reasons = 0, 0, {}

    def as_dict(self) -> dict | None:
        if not (self.ran or self.skipped):
            return None
        return {"ran": self.ran, "skipped": self.skipped, "reasons": sorted(self.reasons)}


_examples_key = pytest.StashKey[Examples]()
# A check whose first drawn configurations are all refused (a part that raises NotImplementedError for any, a
# declaration that excludes what the check asks) ends as not implemented after this many, instead of drawing until
# Hypothesis gives up (hundreds of examples: minutes for an unfinished draft).
REFUSALS_BEFORE_NOT_IMPLEMENTED = 20


def per_example(inner, examples: Examples):
    """Wrap a property check's inner test (``hypothesis.inner_test``, the documented seam): fit each drawn
    problem into the candidate's declared configurations, and turn a configuration the candidate cannot
    build into a skipped example (``hypothesis.reject``) instead of a check ended as not implemented. Each
    example is counted in ``examples``, the running check's."""

    @functools.wraps(inner)
    def run_example(*args, **kwargs):
        from hypothesis import reject

        candidate, drawn = kwargs.get("candidate"), kwargs
        if candidate is not None:
            kwargs = {name: candidate.fit(value) for name, value in kwargs.items()}
        try:
            outcome = inner(*args, **kwargs)
        except PartNotImplemented as exc:
            examples.skipped += 1
            examples.reasons[exc.fields.get("reason") or exc.message] = True
            if not examples.ran and examples.skipped >= REFUSALS_BEFORE_NOT_IMPLEMENTED:
                raise  # a part still a TODO, or a declaration that excludes the check: no need to draw hundreds
            reject()
        except BaseException as exc:
            examples.ran += 1
            fitted = {name: value for name, value in kwargs.items() if _changed(value, drawn[name])}
            if fitted:  # Hypothesis prints what it drew; the report shows what ran (``as_run``)
                exc.fitted_example = fitted
            raise
        examples.ran += 1
        return outcome

    return run_example


@contextlib.contextmanager
def counting_examples(item, examples: Examples):
    """While ``item`` runs, its property check's inner test counts into ``examples``. The test function, and so
    its inner test, is one for every candidate the check is parametrised with: wrapped for this call alone."""
    handle = getattr(getattr(item, "obj", None), "hypothesis", None)
    if handle is None:
        yield
        return
    inner = handle.inner_test
    handle.inner_test = per_example(inner, examples)
    try:
        yield
    finally:
        handle.inner_test = inner


# Parts before the layers, layers before the whole model: a deviation confirmed on a part (FSMT's positional
# encoding) leads the diagnosis of the model checks that fail because of it (the candidate's deviation profile,
# conformance.diagnosis.matching). Modules not listed run last, in collection order.
RUN_ORDER = ("positional_encoding", "schedule", "label_smoothing", "layer_norm", "attention", "multi_head_attention",
             "masks", "feed_forward", "sublayers", "parameter_count", "shapes", "encoder", "decoder", "model",
             "invariances", "golden", "checkpoint", "training")


def run_rank(item) -> int:
    module = item.path.stem.removeprefix("test_")
    return RUN_ORDER.index(module) if module in RUN_ORDER else len(RUN_ORDER)


def pytest_collection_modifyitems(config, items):
    # Prerequisites (depends_on) live in the same module, and the CLI runs xdist with --dist loadfile,
    # which keeps a module on one worker in order: a parallel run blocks exactly what a serial run does.
    items.sort(key=run_rank)  # stable: a module keeps its own order
    run = the_run(config)
    if run.options.no_training:
        items[:] = [item for item in items if not item.get_closest_marker("training")]
    # a float32 or float64 run is the run it was before half precision; a half run leaves out what it cannot judge
    other = "half_precision" if run.options.dtype not in HALF else "full_precision"
    dropped = [item for item in items if item.get_closest_marker(other)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if not item.get_closest_marker(other)]
    deselect_superseded(config, items)
    expression = run.options.select
    if expression:
        selected, deselected = select_by_check_id(items, expression)
        if deselected:
            config.hook.pytest_deselected(items=deselected)
        items[:] = selected


def deselect_superseded(config, items) -> None:
    """Drop the checks of a coarse part (``superseded_by``) for the candidates that have the finer part:
    an adapter with ``multi_head_attention`` is judged by its checks, not again through ``attention_sublayer``."""
    dropped = []
    for item in items:
        marker, candidate = item.get_closest_marker("superseded_by"), _item_candidate(item)
        if marker and candidate is not None and _provides_any(candidate, marker.args):
            dropped.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in dropped]


def _provides_any(candidate, parts) -> bool:
    """Whether the candidate declares one of ``parts``; a candidate that cannot even be loaded (an isolated
    worker that exits at import) declares nothing here: each of its checks reports the load error itself."""
    try:
        return any(candidate.provides(part) for part in parts)
    except LoadError:  # the load error belongs to the checks' reports, not to collection
        return False


def select_by_check_id(items, expression: str):
    """pytest -k semantics (case-insensitive substrings, and/or/not) against ``check_id(item)`` only."""
    from _pytest.mark.expression import Expression  # the parser behind -k (public since pytest 5.4, as -k)

    try:
        compiled = Expression.compile(expression)
    except Exception as exc:  # ParseError: a usage error, not a crash
        raise pytest.UsageError(f"--conformance-select {expression!r}: {exc}") from exc
    selected, deselected = [], []
    for item in items:
        name = check_id(item).lower()
        keep = compiled.evaluate(lambda sub, /, name=name, **kwargs: sub.lower() in name)
        (selected if keep else deselected).append(item)
    return selected, deselected


# The model parts the suite can supply, and the one line of TorchAdapter that asks for them (never credited): said to
# a PyTorch candidate only (the JAX and Keras helpers take the model's own, or none).
SUPPLIABLE = {
    "model.greedy_decode": ". To run the lesson's greedy loop over your decode instead (reported as the suite's,"
                           " never credited to your code): supplied=(\"greedy_decode\",) in TorchAdapter(...)",
    "model.train_step": ". To train with the paper's recipe instead (reported as the suite's, never credited to your"
                        " code): supplied=(\"train_step\",) in TorchAdapter(...)",
}


def pytest_runtest_setup(item):
    candidate = _item_candidate(item)
    if candidate is None:
        return
    from conformance.boundary.candidate import Ledger

    candidate.ledger = Ledger()  # whose code answers this check's calls
    for marker in item.iter_markers("requires"):
        for part in marker.args:
            if not candidate.provides(part):
                hint = SUPPLIABLE.get(part, "") if candidate.conventions.framework == "torch" else ""
                raise PartNotImplemented(f"{candidate.name} does not provide {part}{hint}", part=part)
            # a --dtype it does not declare: not implemented here, never blocked by a prerequisite refused alike
            refusal = candidate.dtype_refusal if candidate.dtype_asked is not None and candidate.loaded else None
            if refusal:
                raise PartNotImplemented(f"{candidate.name} {refusal}", part=part, reason=refusal)
    outcomes = item.config.stash.setdefault(_outcomes_key, {})
    for marker in item.iter_markers("depends_on"):
        for prerequisite in marker.args:
            status = outcomes.get((candidate.name, prerequisite))
            if status not in (None, "passed", "supplied"):  # supplied: it held, on the suite's code
                raise Blocked(f"blocked by {prerequisite} ({status})", blocked_by=prerequisite)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """Seed torch for the check, and count the examples a property check runs and skips."""
    if _item_candidate(item) is None:
        yield
        return
    seed_torch(item)
    examples = item.stash[_examples_key] = Examples()
    with counting_examples(item, examples):
        yield


def seed_torch(item) -> None:
    """Seed torch's global generator from --conformance-seed and the check, so a candidate that draws
    from it (dropout left on, its own initialisation) gives the same verdict in every run and order."""
    from conformance.boundary.isolation.options import seed_worker

    seed = the_run(item.config).options.seed
    torch_seed = int(np.random.default_rng([seed, *check_id(item).encode()]).integers(2**31))
    seed_worker(_item_candidate(item), torch_seed)  # an isolated candidate's torch, in its worker
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(torch_seed)


def _item_candidate(item):
    params = getattr(getattr(item, "callspec", None), "params", {})
    spec = params.get("candidate")
    return item.config.stash.get(_candidates_key, {}).get(spec) if spec else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    candidate = _item_candidate(item)
    if candidate is None or call.when == "teardown" or (call.when == "setup" and call.excinfo is None):
        return
    result = _classify(item, call, candidate)
    credit(item, result, candidate)
    item.config.stash.setdefault(_outcomes_key, {})[(candidate.name, check_id(item))] = result.status
    report.user_properties.append((RESULTS_KEY, result.as_dict()))
    if result.status in ("not_implemented", "blocked", "advisory", "deviation", "supplied"):
        report.outcome = "skipped"
        report.longrepr = (
            str(item.path),
            item.location[1] or 0,
            f"{result.status.replace('_', ' ')}: {result.message}",
        )


def _classify(item, call, candidate) -> CheckResult:
    run = the_run(item.config)
    seed, profile = run.options.seed, run.options.profile
    result = CheckResult(
        id=check_id(item),
        impl=candidate.name,
        title=check_title(item),
        section=check_section(item),
        status="passed",
        duration_s=round(call.duration, 6),
        # quoted for a shell: a submission's path is its author's text (a folder named x$(touch y) runs nothing)
        reproduction=f"transformer-conformance certify {shlex.quote(candidate.name)} -k '{check_id(item)}'"
                     f" --seed {seed}"
                     + ("" if profile == "ci" else f" --profile {profile}")
                     + ("" if run.options.dtype is None else f" --dtype {run.options.dtype}"),
    )
    result.claim = claims.of(item)
    recorder = item.stash.get(_recorder_key, None)
    if recorder:
        result.facts = sorted(recorder.facts)
        result.facts_missed = sorted(recorder.missed)
        result.measurements = recorder.measurements
        margins = [m["margin"] for m in recorder.measurements if m.get("margin") is not None]
        result.margin = max(margins) if margins else None
        result.data = recorder.data or None
    examples = item.stash.get(_examples_key, None)
    result.examples = examples.as_dict() if examples else None
    if call.excinfo is None:
        return result
    exc = _unwrap(call.excinfo.value)
    if examples and examples.skipped and not examples.ran:  # every drawn configuration was unsupported
        exc = PartNotImplemented(f"{candidate.name} could build none of the {examples.skipped} configurations"
                                 f" this check drew: {'; '.join(sorted(examples.reasons))}")
    if isinstance(exc, ConformanceOutcome):
        result.status = exc.status
        for name, value in exc.as_fields().items():
            if name in CheckResult.__dataclass_fields__ and value is not None:
                setattr(result, name, plain(value))
    elif isinstance(exc, pytest.skip.Exception):  # the suite could not run it (torch missing): not the candidate's
        result.status, result.message, result.blocked_by = "blocked", f"the suite could not run this check: {exc}", \
            "the suite"
    elif isinstance(exc, AssertionError):
        result.status, result.message = "failed", str(exc)
    else:  # a bug in the check itself, not in the candidate: still an error, and still reported
        result.status, result.message = "error", f"internal error in the check: {type(exc).__name__}: {exc}"
    notes = getattr(exc, "__notes__", None)
    if notes:
        shown = [as_run(note, getattr(exc, "fitted_example", None)) for note in notes]
        result.message += "".join(f"\n{note}" for note in shown if note)
    unanswered = candidate.ledger.unanswered
    if result.status == "failed" and unanswered:  # a verdict on no answer (a check that reads a raise as a claim)
        result.status, result.message = "error", f"{unanswered} (the check's own verdict: {result.message})"
    if result.status == "error" and result.expected == "finite values":
        describe_nonfinite(item, result, candidate)
    if result.status == "error" and not unanswered and claims.judges_non_finite(item) and non_finite(exc):
        result.status = "failed"  # NaN or inf is the very answer this convention judges (the paper's formula gives it)
    # The paper is silent here: the suite's convention advises, never decides. Only an answer that differs from it
    # is advisory; an error (the load failed, the worker died, a call hung, an answer was non-finite or of the wrong
    # kind) stays an error, as on every other check: points come only from what the code computed.
    if result.status == "failed" and claims.is_convention(item) and not run.options.strict:
        result.status = "advisory"
    declared = deviations.attribute(result, run.deviations) if result.status in FAILING else None
    if declared:
        result.status, result.deviation = "deviation", declared
    return result


def non_finite(exc: BaseException) -> bool:
    """Whether the candidate answered, with NaN or inf values (``candidate.expect_array``'s ``BadOutput``)."""
    return isinstance(exc, BadOutput) and exc.fields.get("actual") == "NaN/inf"


def describe_nonfinite(item, result: CheckResult, candidate) -> None:
    """An output that is not finite ends the check before any comparison: say where the non-finite values fall
    and which input makes them (``diagnosis.measurements.nonfinite``), when the diagnosis is on."""
    from conformance.diagnosis.measurements import enabled
    from conformance.diagnosis.measurements.nonfinite import describe_nonfinite as measured
    from conformance.diagnosis.measurements.nonfinite import part_of

    part = part_of(result.part)
    if the_run(item.config).options.no_diagnosis or not enabled() or part is None:
        return
    try:
        found = measured(candidate, part) if candidate.provides(part) else []
    except Exception:  # noqa: BLE001 - a description that cannot be measured is not offered
        found = []
    if found:
        result.descriptions = found
        result.message += "\n" + "\n".join(f"  measured: {d['text']}" for d in found)


def judged(item) -> list[str]:
    """What the check's verdict is about (``conformance.provenance.judged_aspects``)."""
    requires = [part for marker in item.iter_markers("requires") for part in marker.args]
    judges = [aspect for marker in item.iter_markers("judges") for aspect in marker.args]
    return provenance.judged_aspects(requires, judges)


def credit(item, result: CheckResult, candidate) -> None:
    """Never credit the implementation with what the suite supplied, nor pass a convention a converter hid: a
    pass that rests only on supplied code is *supplied*; a pass through a conversion that stands for a
    deviation from the lessons is that *deviation*; a failure says what was supplied or converted.

    What a check judges may have run in another check (the toy's training, run once and read by the checks of
    what it learned): the parts it judges are looked up in this check's calls, then in the run's, then in what
    the adapter declares the suite supplies."""
    aspects = judged(item)
    ledger = judged_ledger(candidate, aspects)
    if ledger is None:
        return
    result.provenance = ledger
    if result.status == "passed" and provenance.rests_on_supplied(aspects, ledger["supplied"]):
        parts = sorted({provenance.split(a)[0] for a in aspects})
        notes = "; ".join(f"{part}: {ledger['supplied'][part]['note']}" for part in parts)
        result.status = "supplied"
        result.message = (f"passed on code the suite supplied, not the implementation's ({notes}); not credited:"
                          " give the implementation's own to certify it")
        return
    converted = provenance.judged_conversions(aspects, ledger["converted"])
    if result.status == "passed" and converted:
        names = list(dict.fromkeys(entry["deviation"] for entry in converted))
        how = "; ".join(f"{e['part']}: {e['converter']} converted {e['what']}" for e in converted)
        result.status = "deviation"
        result.deviation = {"name": " + ".join(names), "names": names, "reason": f"declared by a conversion ({how})",
                            "confirmed": True}
        result.message = (f"passed only through the adapter's conversion ({how}): the implementation's own"
                          f" convention is {' + '.join(names)}, not the lessons'")
    elif result.status != "passed" and (ledger["supplied"] or ledger["converted"]):
        result.message += "\n" + provenance_note(ledger)


def judged_ledger(candidate, aspects: list[str]) -> dict | None:
    """This check's account of whose code answered, completed for the parts it judges but did not call."""
    own, run = candidate.ledger.as_dict() or {"supplied": {}, "converted": []}, candidate.history.as_dict()
    parts = {provenance.split(aspect)[0] for aspect in aspects}
    elsewhere = {**_static_supplied(candidate), **((run or {}).get("supplied") or {})}
    own["supplied"].update({part: rec for part, rec in elsewhere.items()
                            if part in parts and part not in own["supplied"]})
    called = {entry["part"] for entry in own["converted"]}
    own["converted"] += [entry for entry in (run or {}).get("converted") or []
                         if entry["part"] in parts and entry["part"] not in called]
    return own if own["supplied"] or own["converted"] else None


def _static_supplied(candidate) -> dict:
    try:
        return candidate.supplied_parts()
    except LoadError:  # an isolated candidate that could not be loaded supplies nothing
        return {}


def provenance_note(ledger: dict) -> str:
    """One line: what the suite supplied and what the adapter converted during the check."""
    parts = [f"{part} supplied by the suite ({rec['note']})" for part, rec in ledger["supplied"].items()]
    parts += [f"{e['part']} converted by {e['converter']} ({e['what']})" for e in ledger["converted"]]
    return "  answered with help: " + "; ".join(parts)


def _changed(ran, drawn) -> bool:
    """Whether fitting changed a drawn argument (``fit`` returns what it leaves alone, or an equal copy)."""
    if ran is drawn:
        return False
    try:
        return bool(ran != drawn)
    except Exception:  # noqa: BLE001 - values without a plain equality: say they changed
        return True


HYPOTHESIS_EXAMPLE = re.compile(r"^(Failing test case|Falsifying example): ")
EXAMPLE_ARGUMENT = re.compile(r"^    (\w+)=", re.M)
FIXTURES = {"candidate", "check", "request", "rng", "seed"}  # given by the suite, not drawn: no part of the example


def as_run(note: str, fitted: dict | None) -> str:
    """Hypothesis's failing example in the suite's words: the drawn arguments only (the suite's fixtures left out),
    each one the run fitted to the candidate's declarations (``Candidate.fit``) shown as it ran, and a line that
    says so; never Hypothesis's heading (its wording changes with its releases, and its call of the test function
    means nothing to the candidate's author: the reproduction is the report's ``certify ... -k ... --seed``). Any
    other note unchanged."""
    if not HYPOTHESIS_EXAMPLE.match(note):
        return note
    from hypothesis.vendor.pretty import pretty

    starts = list(EXAMPLE_ARGUMENT.finditer(note))
    if not starts:
        return note
    end = note.rstrip().rfind("\n)")
    arguments = []
    for match, following in zip(starts, [*starts[1:], None], strict=True):
        name = match.group(1)
        if name in FIXTURES:
            continue
        if fitted and name in fitted:
            arguments.append(f"    {name}={textwrap.indent(pretty(fitted[name]), '    ').lstrip()}")
        else:
            stop = following.start() if following is not None else end + 1
            arguments.append(note[match.start():stop].rstrip("\n").removesuffix(","))
    if not arguments:
        return ""
    shown = sorted(set(fitted or ()) & {m.group(1) for m in starts})
    said = f" ({', '.join(shown)} as run: fitted to the configurations the candidate declares)" if shown else ""
    return "\n".join([f"example{said}:", *arguments])


def _unwrap(exc: BaseException) -> BaseException:
    """Hypothesis raises an ExceptionGroup when several distinct bugs show; report the first."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc




def isolation_summary(candidate) -> dict:
    from conformance.boundary.isolation.options import summary

    return summary(candidate)


class ResultCollector:
    """Runs where the results arrive (the controller under xdist): gathers them and builds the run's one
    report (``conformance.run.report``). The CLI hands one in (``pytest.main(plugins=[collector])``) and reads
    ``collector.report()`` afterwards; without one, the plugin makes its own. The report is a method, not a
    property: pytest (before 8.4) reads every attribute of a plugin object while looking for fixtures, and a
    property read then built the report before the first result."""

    def __init__(self):
        self.config, self.candidates = None, {}
        self.results: list[CheckResult] = []
        self.started = time.time()
        self._report: dict | None = None

    def bind(self, config, candidates) -> None:
        self.config, self.candidates = config, candidates

    def pytest_runtest_logreport(self, report):
        for key, value in report.user_properties:
            if key == RESULTS_KEY:
                self.results.append(CheckResult.from_dict(value))

    def metadata(self) -> dict:
        run = the_run(self.config)
        options, declared = run.options, run.deviations
        return {
            "strict": options.strict,
            "selection": options.select,
            "declared_deviations": deviations.summary(self.results, declared) if declared else [],
            "seed": options.seed,
            "dtype": options.dtype,  # the dtype the run asked for (--dtype); None: each implementation's own
            "hypothesis_profile": options.profile,
            "torch_threads": options.threads,
            "diagnosis": not options.no_diagnosis,
            "duration_s": round(time.time() - self.started, 3),
            "implementations": [
                {
                    "name": spec,
                    "conventions": c.conventions.as_dict(),
                    "provided_parts": c.provided_parts(),
                    "supplied_parts": c.supplied_parts(),
                    "load_warnings": getattr(c, "load_warnings", []),
                    "loaded": c.loaded,
                    "isolation": isolation_summary(c),
                }
                for spec, c in self.candidates.items()
            ],
        }

    def report(self) -> dict:
        """The run's report, built once, after the last result (every rendering reads this dict)."""
        if self._report is None:
            from conformance.diagnosis.evidence import withdraw_contradicted
            from conformance.judging.twins import annotate_hard_coding
            from conformance.run.report import build_report

            withdraw_contradicted(self.results)
            annotate_hard_coding(self.results)
            self._report = build_report(self.results, self.metadata())
        return self._report

    def pytest_sessionfinish(self, session):
        path = the_run(self.config).options.json
        if path and not hasattr(self.config, "workerinput"):  # the controller writes; xdist workers only run checks
            from conformance.reports.json_report import render

            Path(path).write_text(render(self.report()))

    def pytest_terminal_summary(self, terminalreporter):
        if not the_run(self.config).options.summary:
            return
        from conformance.reports.terminal import render

        terminalreporter.write(render(self.report()))
