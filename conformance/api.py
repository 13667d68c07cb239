"""The Python API: ``certify(impl)`` runs the checks and returns a ``Report``; the command line is a layer over it.

``impl`` is what ``transformer-conformance certify`` takes (a built-in name, ``mutant:NAME``, ``module:attribute``,
a path to a .py file or a notebook), or a live object of this process: an adapter, an adapter class, or a model class or
instance, drafted on the fly as ``template --from`` drafts it. A draft runs only where it builds: where only the
model's author can decide something (a constructor argument no config key names, a model the suite cannot build),
``DraftIncomplete`` says what, with the draft to finish. A live object runs in this process (there is nothing to
isolate it from: its code already ran here); a path is isolated as on the command line.

The options are the command line's (``conformance.run.options``), spelt as keywords: ``training`` (off by default
here: the toy run takes minutes), ``dtype``, ``select`` (``-k``), ``seed``, ``isolate``, ``diagnosis``, ``strict``,
``timeout``, ``threads``, ``progress``, ``deviations``, ``cache``, ``pass_env``, ``allow_read``, ``cell_timeout``
(a notebook's cells), and the reports to write as well (``json``, ``html``, ``markdown``, ``junit``, ``badge``:
paths). In a notebook the progress is one line rewritten in place in the cell, and the stop button (or Ctrl-C) ends
the run cleanly and raises ``KeyboardInterrupt``. docs/notebooks.md has the whole of it.
"""

from __future__ import annotations

import inspect
from pathlib import Path

from conformance.boundary.isolation import CELL_TIME_S
from conformance.errors import LoadError
from conformance.run.options import Options
from conformance.run.session import Outcome

RENDERINGS = ("html", "markdown", "junit", "badge")


class DraftIncomplete(LoadError):
    """A model drafted on the fly cannot be built yet: only its author can decide what the draft's TODOs name.
    ``draft``: the adapter source to finish (save it as a file, resolve its TODOs, and certify that file)."""

    def __init__(self, message: str, draft: str):
        super().__init__(message)
        self.draft = draft


def certify(impl, *, training: bool = False, dtype: str | None = None, select: str | None = None, seed: int = 0,
            isolate: bool | None = None, diagnosis: bool = True, strict: bool = False, timeout: float = 60.0,
            threads: int = 1, progress: str = "auto", deviations: str | None = None, cache: bool = True,
            pass_env: tuple[str, ...] = (), allow_read: tuple[str, ...] = (), cell_timeout: float = CELL_TIME_S,
            json: str | None = None,
            html: str | None = None, markdown: str | None = None, junit: str | None = None,
            badge: str | None = None):
    """Certify ``impl`` (see the module's text) and return its ``Report``. Raises ``LoadError`` where the
    implementation cannot be loaded (the report of a load error, with ``json=``, is written first)."""
    from conformance.reports.report import Report

    options = Options(no_training=not training, dtype=dtype, select=select, seed=seed, isolate=isolate,
                      no_diagnosis=not diagnosis, strict=strict, timeout=timeout, threads=threads,
                      progress=progress, deviations=deviations, no_cache=not cache,
                      pass_env=tuple(pass_env), allow_read=tuple(allow_read), cell_timeout=cell_timeout, json=json)
    renderings = {name: path for name, path in zip(RENDERINGS, (html, markdown, junit, badge), strict=True) if path}
    outcome = execute(impl, options, renderings=renderings, echo=False)
    if outcome.load_error is not None:
        raise LoadError(outcome.load_error)
    if outcome.report is None:
        raise RuntimeError(f"the run ended without a report (exit code {outcome.code}): see the messages above")
    if outcome.interrupted:
        stop = KeyboardInterrupt("certify was stopped: the report of the checks that ran is this exception's report")
        stop.report = Report(outcome.report, interrupted=True)
        raise stop
    return Report(outcome.report)


def execute(impl, options: Options, *, renderings: dict[str, str] | None = None, plugins=(),
            echo: bool = True) -> Outcome:
    """One run of the checks on ``impl`` (a spec or a live object), its renderings written; ``echo``: print its
    report and what was written, and say a load error on stderr (the command line's)."""
    from conformance.boundary.isolation.supervisor import stop_all_workers
    from conformance.boundary.isolation.warm import WarmWorkers
    from conformance.boundary.loading import load
    from conformance.run.runs import Run
    from conformance.run.session import AwaitWorker, checks_outcome, load_failed

    live = not isinstance(impl, str | Path)
    spec = live_name(impl) if live else str(impl)
    if live and options.isolate:
        raise ValueError(f"{spec} is an object of this process: it cannot be isolated (its code already ran here)."
                         " Fix: certify the file that defines it, or leave isolate unset")
    if live and options.workers > 1:
        raise ValueError(f"{spec} is an object of this process: it runs in one worker (workers=1)")
    run = Run([spec], options, plugins=list(plugins), renderings=renderings or {},
              warm=None if live else WarmWorkers())
    try:
        if run.options.deviations:
            from conformance.judging import deviations

            run.deviations = deviations.load(run.options.deviations)
        try:  # fail fast, with the fix, before pytest starts; an isolated worker imports while pytest starts
            candidate = live_candidate(impl, spec, options) if live else \
                load(spec, **run.load_options(), wait=False)
        except DraftIncomplete:
            raise
        except LoadError as exc:
            return load_failed(run, str(exc), echo=echo)
        run.candidates[spec] = candidate  # the plugin's: one worker (one import) per run
        run.plugins.append(AwaitWorker(candidate, on_failure="exit"))
        outcome = checks_outcome(run, quiet_usage=True, echo=echo)
        error = getattr(candidate.adapter, "reason", None)  # UnloadableAdapter: the worker could not load it
        return load_failed(run, error, echo=echo) if error else outcome
    finally:
        stop_all_workers()
        if run.warm is not None:
            run.warm.close()


# ------------------------------------------------------------------------------------------------------------------
# Live objects
# ------------------------------------------------------------------------------------------------------------------


def is_adapter(value) -> bool:
    """An adapter object or class: it declares the protocol's ``Conventions``, or builds models."""
    from conformance.adapter import Conventions

    return isinstance(getattr(value, "conventions", None), Conventions) \
        or callable(getattr(value, "build_model", None))


def live_name(value) -> str:
    """The report's name of a live object: the adapter's own ``name``, else its class's."""
    own = getattr(value, "name", None) if is_adapter(value) and not inspect.isclass(value) else None
    if isinstance(own, str) and own:
        return own
    kind = value if inspect.isclass(value) or inspect.isfunction(value) else type(value)
    return f"{kind.__module__}:{kind.__qualname__}"


def live_candidate(value, spec: str, options: Options):
    """The candidate of a live object: an adapter as it is, an adapter class built, a model drafted."""
    from conformance.boundary.loading import in_process

    if inspect.isclass(value) and is_adapter(value):
        value = value()
    if is_adapter(value):
        return in_process(value, spec, timeout_s=options.timeout, dtype=options.dtype)
    adapter, source = drafted_adapter(value)
    candidate = in_process(adapter, spec, timeout_s=options.timeout, dtype=options.dtype)
    todos = todo_lines(source)
    candidate.load_warnings = [*candidate.load_warnings, f"drafted on the fly, as template --from drafts it, and run"
                               f" with its guesses{': ' if todos else ''}" + "; ".join(todos)]
    return candidate


def todo_lines(source: str) -> list[str]:
    """The draft's TODOs, each on one line (a TODO comment and its indented continuation lines)."""
    found: list[str] = []
    for line in source.splitlines():
        text = line.strip()
        if text.startswith("# TODO") or text.startswith("#   TODO"):
            found.append(text.lstrip("# ").removeprefix("TODO ").strip())
        elif found and text.startswith("#") and line[:line.index("#") + 5].endswith("    "):
            found[-1] += " " + text.lstrip("# ").strip()
    return found


def drafted_adapter(value) -> tuple[object, str]:
    """The adapter ``template --from`` drafts for a model class, factory or instance (an instance is drafted from
    its class: the checks build their own models), run as drafted, and its source; ``DraftIncomplete`` where it
    cannot build."""
    from conformance.adapters.draft import draft_for
    from conformance.config import toy_config

    target = value if inspect.isclass(value) or inspect.isfunction(value) else type(value)
    source = draft_for(target.__module__, target)
    namespace: dict = {"__name__": f"conformance_draft_{target.__name__}"}
    try:
        exec(compile(source, f"<draft of {target.__qualname__}>", "exec"), namespace)  # noqa: S102 - the suite's own
        adapter = namespace["adapter"]
        adapter.build_model(toy_config().as_dict(), seed=0)
    except NotImplementedError as exc:
        raise DraftIncomplete(f"{target.__qualname__} was drafted, but only its author can finish the draft: {exc}."
                              " Fix: save the draft (this exception's draft attribute) as a file, resolve its"
                              " TODOs, and certify that file", source) from None
    except Exception as exc:  # noqa: BLE001 - the user's code, built as drafted: the draft is the way on
        raise DraftIncomplete(f"{target.__qualname__} was drafted, but the draft does not build it:"
                              f" {type(exc).__name__}: {exc}. Fix: save the draft (this exception's draft attribute)"
                              " as a file, check its guesses and TODOs, and certify that file", source) from None
    return adapter, source
