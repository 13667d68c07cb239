"""Grading one submission: find its adapter, certify it isolated with a fresh seed, score it, write reports.

``transformer-conformance grade SUBMISSION [--points points.toml] [--gradescope results.json] [--json PATH]``.
SUBMISSION is a folder (its adapter is the shallowest file named ``--adapter-name``, default
``adapter.py``; without one, its shallowest notebook), a ``.py`` file or a notebook (``.ipynb``: its cells run in a
kernel in the sandboxed worker; ``--adapter FILE.py``, the instructor's mapping of the lesson's classes, runs after
them in their namespace, for every submission). The run seed is drawn unless ``--seed`` is given, and recorded in the
report. A submission that cannot be loaded still gets a complete report: every check is an error
naming why, so its score is 0 of the same maximum as everyone's.
"""

from __future__ import annotations

import json
import secrets
import shlex
import sys
import tempfile
import time
from pathlib import Path

from conformance.errors import LoadError

SKIPPED_FOLDERS = {".git", "__pycache__", ".venv", "venv", "node_modules", "__MACOSX", ".ipynb_checkpoints"}
NOTEBOOK = ".ipynb"
NOTEBOOK_BYTES = 100 * 2**20  # a notebook handed in as a file is copied for its grade: at most this (outputs cleared,
# a lesson's notebook is well under a MiB; with its pictures a few)


ADAPTER_DEPTH = 8  # folder levels searched for the adapter: a zip adds one or two, never hundreds


def find_adapter(folder: Path, name: str) -> Path:
    """The shallowest ``name`` under ``folder`` (a student's zip often adds a folder level), at most
    ``ADAPTER_DEPTH`` levels down; links to folders are not followed."""
    found = [path for path in files_named(folder, name)
             if not SKIPPED_FOLDERS & set(path.relative_to(folder).parts[:-1])]
    if not found:
        raise LoadError(f"no {name} in {folder}. Fix: the submission must contain {name} (the adapter), or"
                        " name its file with --adapter-name")
    return min(found, key=lambda path: (len(path.relative_to(folder).parts), str(path)))


def files_named(folder: Path, name: str, depth: int = ADAPTER_DEPTH) -> list[Path]:
    """Regular files called ``name`` under ``folder``, at most ``depth`` levels down, links not followed."""
    return files_where(folder, lambda found: found == name, depth)


def files_where(folder: Path, matches, depth: int = ADAPTER_DEPTH) -> list[Path]:
    """Regular files whose name ``matches`` under ``folder``, at most ``depth`` levels down, links not followed."""
    from conformance.boundary.isolation.reads import entries_under

    return [Path(entry.path) for entry in entries_under(folder, depth=depth)
            if matches(entry.name) and entry.is_file(follow_symlinks=False)]


def draw_seed(seed: int | None) -> int:
    """The run's seed: the one given, else a fresh one (recorded in the report, so it can be replayed)."""
    return secrets.randbelow(2**31) if seed is None else seed


def grading_options(args, seed: int, report: Path):
    """The options of a grading run: the grade's own, then what every grading run has."""
    import dataclasses

    from conformance.run.options import Options

    # pass_env: only what the grader named, a submission sees no other variable of the grader's; allow_read: and
    # it reads no folder but its own, Python's and these. no_cache: no answers kept on disk: the submission runs
    # on this machine during grading, and could write entries that name a bug it does not have (or hide one). The
    # diagnosis never trusts files another process could have written meanwhile; it recomputes every answer. The
    # one exception is a class's folder that no submission can write (warm_graders.shared_answers).
    return dataclasses.replace(Options.from_namespace(args), json=str(report), seed=seed, profile="grade",
                               workers=1, verbose=False, progress="off",
                               no_cache=not getattr(args, "shared_answers", False))


def grade_submission(args, plugins=(), warm=None) -> int:
    """Grade ``args.submission``; print the report and the score; exit as ``certify`` would. ``plugins``: more
    pytest plugins for its run (the profiler's); ``warm``: the class's ``WarmWorkers`` (else the run's own).
    Stopped by SIGINT or SIGTERM, its report says incomplete and scores 0, and it exits 128 + the signal."""
    from conformance.grading.interrupts import interrupts
    from conformance.grading.run_record import run_identity
    from conformance.reports.safe_text import one_line, visible_text
    from conformance.run import janitor

    if warm is None:  # a grade of its own (a class's graders share their class's janitor)
        janitor.start()
    started = time.monotonic()
    submission = Path(args.submission)
    notebook_adapter = getattr(args, "notebook_adapter", None)
    spec, failure = adapter_of(submission, args.adapter_name, notebook_adapter)
    seed = draw_seed(args.seed)
    identity = run_identity(args, seed)
    with interrupts() as stop, tempfile.TemporaryDirectory(prefix="conformance-grade-") as tmp:
        janitor.remove_after_exit(tmp)
        report_path = Path(args.json) if args.json else Path(tmp) / "report.json"
        report_path.unlink(missing_ok=True)  # a report found after the run is this run's, and gets its score
        graded, copy = submission, None
        if submission.is_file() and submission.suffix == NOTEBOOK and not failure:  # a notebook of a class folder
            size = submission.stat().st_size
            if size > NOTEBOOK_BYTES:
                failure = (f"{submission.name} is {size / 2**20:,.0f} MiB, more than a notebook of"
                           f" {NOTEBOOK_BYTES // 2**20} MiB: not copied, not run. Fix: clear its outputs")
            else:
                copy = staged(submission, tmp)
                graded = copy.parent
        try:
            code = run_the_checks(args, graded, spec, failure, seed, report_path, plugins, warm,
                                  load_spec=copy and notebook_spec(copy, notebook_adapter))
        except KeyboardInterrupt:
            if not stop:
                raise
        finally:  # whatever failed after the checks wrote their report, the grade and results.json are written
            if not stop and report_path.is_file():
                report = finish_report(report_path, submission, spec, args, identity, time.monotonic() - started)
        if stop:
            report = finish_incomplete_report(report_path, submission, spec, args, identity,
                                              f"interrupted by {stop.name}", time.monotonic() - started)
            if report.get("complete") is not True:
                print(f"score: 0 (incomplete: {report['incomplete']}; seed {seed}; grade it again to score it)")
            return stop.exit_code
        if not report_path.is_file():
            return code
    note = report["grade"]["confinement"]
    if report["grade"].get("walls"):
        print(visible_text(report["grade"]["walls"]))
    mapping = f" --adapter {shlex.quote(notebook_adapter)}" if notebook_adapter else ""
    print(one_line(f"score: {report['grade']['score']:g} / {report['grade']['max_score']:g}"
                   f" (seed {seed}; replay: transformer-conformance grade {shlex.quote(str(args.submission))}"
                   f"{mapping} --seed {seed})" + (f"; {note}" if note else "")))
    for line in look_up_lines(report["grade"]):
        print(visible_text(line))
    return code


def look_up_lines(grade: dict) -> list[str]:
    """What the grade says of answers looked up, not computed: the flagged twins, and the points withheld."""
    from conformance.grading.points import withheld_line

    lines = [f"look-up: {found['check']} matches the published values but not the formula on fresh inputs"
             f" ({', '.join(found['published']) or 'its published checks'} passed, on evidence: hard-coded?)"
             for found in grade.get("lookups") or []]
    withheld = grade.get("withheld") or {}
    if withheld:
        lines.append(withheld_line(list(withheld)))
    return lines


def adapter_of(submission: Path, adapter_name: str, notebook_adapter: str | None = None) -> tuple[str, str | None]:
    """The adapter a grade runs, and why it cannot be loaded (None if it may be): the folder's adapter file, else
    (or, with the instructor's ``notebook_adapter``, always) its notebook, with that file run after its cells."""
    try:
        if not submission.is_dir():
            return notebook_spec(submission, notebook_adapter) if submission.suffix == NOTEBOOK \
                else str(submission), None
        if adapter_name.endswith(NOTEBOOK):  # the notebook named: --adapter-name lesson.ipynb
            return notebook_spec(find_adapter(submission, adapter_name), notebook_adapter), None
        if notebook_adapter or not files_named(submission, adapter_name):
            notebook = find_notebook(submission)
            if notebook is not None:
                return notebook_spec(notebook, notebook_adapter), None
            if notebook_adapter:
                raise LoadError(f"no notebook ({NOTEBOOK}) in {submission}. Fix: the submission must contain the"
                                " notebook the adapter file maps")
        return str(find_adapter(submission, adapter_name)), None
    except LoadError as exc:
        return str(submission / adapter_name), str(exc)


def notebook_spec(notebook: Path, notebook_adapter: str | None) -> str:
    """``NOTEBOOK.ipynb[+ADAPTER.py]`` (``boundary.isolation.notebooks``)."""
    return f"{notebook}+{Path(notebook_adapter).resolve()}" if notebook_adapter else str(notebook)


def find_notebook(folder: Path) -> Path | None:
    """The shallowest notebook under ``folder`` (Jupyter's checkpoints left out), None if it has none;
    ``LoadError`` where several lie at that level (which one a student meant is theirs to say)."""
    found = [path for path in files_where(folder, lambda name: name.endswith(NOTEBOOK))
             if not SKIPPED_FOLDERS & set(path.relative_to(folder).parts[:-1])]
    if not found:
        return None
    depth = min(len(path.relative_to(folder).parts) for path in found)
    shallowest = sorted(path for path in found if len(path.relative_to(folder).parts) == depth)
    if len(shallowest) > 1:
        names = ", ".join(str(path.relative_to(folder)) for path in shallowest[:5])
        raise LoadError(f"{folder} holds {len(shallowest)} notebooks at the same level ({names}): which one is the"
                        " submission? Fix: keep one, or name it: grade --adapter-name NAME.ipynb")
    return shallowest[0]


def staged(submission: Path, tmp: str) -> Path:
    """A notebook handed in as a file of the class folder, copied into a folder of its own: what its worker may
    read of its own is that folder, never its classmates' notebooks beside it."""
    import shutil

    own = Path(tmp) / "submission"
    own.mkdir(exist_ok=True)
    return Path(shutil.copy2(submission, own / submission.name))


def run_the_checks(args, submission: Path, spec: str, failure: str | None, seed: int, report_path: Path, plugins,
                   warm, *, load_spec: str | None = None) -> int:
    """The checks of a grade, run on the submission's adapter (every one an error naming why if there is none);
    the raw report to ``report_path``; ``run_checks``' exit code. ``load_spec``: where the adapter is loaded from,
    when not ``spec`` (a staged copy), reported as ``spec``."""
    from conformance.boundary.isolation.supervisor import stop_all_workers
    from conformance.boundary.isolation.warm import WarmWorkers
    from conformance.boundary.loading import load
    from conformance.run import runs
    from conformance.run.session import AwaitWorker, run_checks, unloadable_candidate

    options = grading_options(args, seed, report_path)
    own = submission if submission.is_dir() else submission.parent  # what it may read of its own
    run = runs.Run([spec], options, runs.limits(options, hide_suite_code=True, own_folder=str(own)),
                   plugins=list(plugins), warm=warm or WarmWorkers())
    try:
        try:
            candidate = unloadable_candidate(spec, failure) if failure else \
                load(load_spec or spec, **run.load_options(), wait=False)
        except LoadError as exc:
            candidate = unloadable_candidate(spec, str(exc))
        candidate.name = spec
        candidate.half_refused = options.dtype is None  # the submission's own half dtype loosens no tolerance
        run.candidates[spec] = candidate
        run.plugins.append(AwaitWorker(candidate, on_failure="replace"))
        return run_checks(run)
    finally:
        stop_all_workers()
        if warm is None:
            run.warm.close()


def finish_report(path: Path, submission: Path, spec: str, args, identity: dict, elapsed: float) -> dict:
    """Add the submission, its score, the points used and the run to the JSON report, marked complete (in one
    atomic write: a report cut short never says complete); write results.json if asked."""
    from conformance.grading.gradescope import build_results
    from conformance.grading.points import Points, report_loaded, totals
    from conformance.grading.run_record import mark_complete, write_report
    from conformance.judging.twins import flagged_look_ups
    from conformance.reports.safe_text import json_text

    points = Points.from_toml(args.points) if args.points else Points()
    report = json.loads(path.read_text())
    scored = points.score_report(report)
    score, max_score = totals(scored)
    report["submission"] = submission_record(submission, spec)
    note = confinement(report)
    report["grade"] = {"score": score, "max_score": max_score, "points": points.source,
                       "loaded": report_loaded(report), "reads_confined": not note, "confinement": note,
                       "walls": walls_line(report), "lookups": flagged_look_ups(report["checks"]),
                       "withheld": {s.id: s.withheld for s in scored if s.withheld}}
    write_report(path, mark_complete(report, identity))
    if args.gradescope:
        results = build_results(report, points, execution_time=elapsed)
        Path(args.gradescope).write_text(json_text(results, indent=2) + "\n")
        print(f"Gradescope results written to {args.gradescope}", file=sys.stderr)
    return report


def finish_incomplete_report(path: Path, submission: Path, spec: str, args, identity: dict, why: str,
                             elapsed: float) -> dict:
    """The report of a grade stopped before its end: what was judged (if anything), marked incomplete, 0 points;
    results.json (if asked) says the same."""
    from conformance.grading.run_record import is_complete, mark_incomplete, read_report, stand_in_report, write_report
    from conformance.reports.safe_text import json_text

    report = read_report(path) if path.is_file() else None
    if report and is_complete(report):  # finished just before the signal: it stands
        return report
    judged = len(report.get("checks") or []) if report else 0
    reason = f"{why} after {judged} checks were judged: the grade did not finish"
    if report is None:
        report = stand_in_report(submission_name(submission), str(submission), identity, reason)
    report["submission"] = submission_record(submission, spec)
    write_report(path, mark_incomplete(report, identity, reason))
    if args.gradescope:
        results = {"score": 0, "execution_time": int(round(elapsed)), "output_format": "text",
                   "output": f"transformer-conformance: incomplete, 0 points: {reason}. Ask for a regrade.",
                   "tests": []}
        Path(args.gradescope).write_text(json_text(results, indent=2) + "\n")
    return report


def submission_record(submission: Path, spec: str) -> dict:
    return {"name": submission_name(submission), "path": str(submission), "adapter": spec}


def confinement(report: dict) -> str:
    """"" when the kernel kept the submission from reading outside its folder (Landlock), else the mark its grade
    carries, saying why ("reads not confined: ..."): it could have read a classmate's work or a solution."""
    from conformance.boundary.isolation.sandbox import READS_ABI, landlock_abi

    isolation = (report.get("implementations") or [{}])[0].get("isolation") or {}
    if not isolation.get("isolated"):
        return "reads not confined: graded in this process (--no-isolate), with the grader's access to every file"
    confined = isolation.get("reads_confined")
    if confined is None:  # not loaded: the worker's hello, which says what applied, never came; the kernel's say
        confined = isolation.get("limits", {}).get("landlock", True) and landlock_abi() >= READS_ABI
    if confined:
        return ""
    return ("reads not confined: this kernel has no Landlock (Linux 5.13+, ABI 1) and bubblewrap is absent, so the"
            " submission could read any file the grader can (a classmate's work, a solution); install bubblewrap"
            " (the package bubblewrap), or grade on a kernel with Landlock")


def walls_line(report: dict) -> str:
    """Which walls stood around the submission's worker, as the grader built them ("sandbox: bubblewrap ..."), and
    what the worker built itself (its claim: code running in it could have said anything)."""
    from conformance.boundary.isolation.sandbox import TMP_MIB

    isolation = (report.get("implementations") or [{}])[0].get("isolation") or {}
    if not isolation.get("isolated"):
        return "sandbox: none (graded in this process, --no-isolate)"
    walls, claims = isolation.get("walls") or {}, isolation.get("worker_claims") or {}
    stood = []
    if walls.get("bubblewrap"):
        stood.append(f"bubblewrap (read-only files, no network, a {walls.get('tmp_mib')} MiB tmpfs)")
    else:
        stood.append("no bubblewrap (install the package bubblewrap for the strongest walls)")
    abi = isolation.get("landlock_abi") or 0
    stood.append(f"Landlock ABI {abi}" if abi else "no Landlock")
    groups = [name for key, name in (("memory_cgroup", "memory"), ("pids_cgroup", "processes")) if walls.get(key)]
    stood.append(f"control groups ({', '.join(groups)})" if groups else "no control groups (not writable here)")
    if not walls.get("bubblewrap"):
        own = [name for key, name in (("read_only_mounts", "read-only mounts"),
                                      ("tmpfs", f"a {TMP_MIB} MiB tmpfs as its folder"),
                                      ("own_network", "no network, no IPC of the machine's"),
                                      ("calls_filtered", "no sockets, io_uring or System V IPC (seccomp)"))
               if claims.get(key)]
        stood.append("the worker's own walls (its claim): " + (", ".join(own) if own else "none"))
    return "sandbox: " + "; ".join(stood)


def submission_name(submission: Path) -> str:
    return submission.stem if submission.suffix == ".py" else submission.resolve().name
