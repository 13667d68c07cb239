"""The grader's side of isolation: a proxy adapter whose parts run in a worker process.

``ProxyAdapter`` has the candidate's ``conventions`` (rebuilt from plain data), and exactly the parts
(``ADAPTER_PARTS``) and model parts (``MODEL_PARTS``) the real adapter provides; each forwards its
call over a pipe to the worker (``worker.py``) and returns the plain data that comes back. ``Candidate``
wraps it like any adapter, so the checks, the comparisons and every verdict stay in this process,
which never imports the candidate. The worker's process (started, stopped, its supervisor's report) is
``supervisor.Worker``; what one implementation may use, ``Limits``; ``load_isolated`` makes the candidate.

What can happen to a call, and what the check then sees:

- the part returns: its value (arrays as copies: nothing the candidate keeps can change them later);
- it raises ``NotImplementedError("why")``: the same here (the suite reports *not implemented*);
- it raises anything else: an exception of the same type name and message (the suite reports *error*);
- it returns a framework value that cannot come back (``frameworks``: a traced JAX value, a deleted buffer): the
  same ``BoundaryValueError`` as in process;
- JAX compiles while it runs: the worker says so as each compilation starts and ends, and the call's limit waits
  for it and is extended by its duration (up to ``frameworks.MAX_CREDIT_S`` a call), as ``time_limit`` is in process;
- the worker exits, crashes or is killed: ``AdapterError`` naming what happened (status, signal, the
  limit it ran into) and the end of its output; the next call starts a fresh worker;
- no answer within the per-call limit, or the total limit: the worker is killed, ``AdapterError``.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from conformance.adapter import ADAPTER_PARTS, MODEL_PARTS, PARTS, Conventions
from conformance.boundary.candidate import Candidate
from conformance.boundary.isolation import (
    CELL_TIME_S,
    WORKER_MEMORY_MIB,
    WORKER_TOTAL_S,
    environment,
    frameworks,
    importing,
    notebooks,
    reads,
    sandbox,
)
from conformance.boundary.isolation.notebooks import NotebookTarget
from conformance.boundary.isolation.supervisor import Worker
from conformance.boundary.isolation.warm import shadows_preloaded
from conformance.boundary.isolation.wire import ChannelClosed, ChannelTimeout, WireError
from conformance.errors import AdapterError, LoadError


@dataclass(frozen=True)
class Limits:
    """What one isolated implementation may use. ``call_s`` None: the per-part timeout + 5 s."""

    call_s: float | None = None
    total_s: float = WORKER_TOTAL_S
    load_s: float = 120.0
    memory_mib: int = WORKER_MEMORY_MIB
    cpu_s: int = 1800
    files: int = 512
    file_mib: int = 64
    processes: int = 64
    max_restarts: int = 20
    landlock: bool = True
    hide_suite_code: bool = False  # grade: of the suite, a submission may read the adapter protocol only (reads.py)
    pass_env: tuple[str, ...] = ()  # the grader's variables the worker gets (--pass-env): names, never values
    own_folder: str | None = None  # what the worker may read of its own: None, the adapter's folder (reads.py)
    allow_read: tuple[str, ...] = ()  # more folders it may read (--allow-read)
    cell_s: float = CELL_TIME_S  # each code cell of a notebook (--cell-timeout)

    def as_dict(self) -> dict:
        return {**asdict(self), "pass_env": list(self.pass_env), "allow_read": list(self.allow_read)}


SIGNAL_CAUSES = {
    signal.SIGXCPU: "it used up its CPU-time limit ({cpu_s} s)",
    signal.SIGXFSZ: "it exceeded the file-size limit ({file_mib} MiB): it wrote too much (stdout and stderr count)",
    signal.SIGKILL: "killed (SIGKILL): the out-of-memory killer, or the CPU-time hard limit",
    signal.SIGSEGV: "it crashed (SIGSEGV): a native extension, or memory exhausted inside one",
    signal.SIGABRT: "it aborted (SIGABRT): a native library gave up, often on memory",
    signal.SIGBUS: "it crashed (SIGBUS)",
}


def start_message(spec: str, limits: Limits, *, builtin: bool, threads: int, dtype: str | None = None) -> dict:
    """What the worker is told first: the implementation, its limits, what it may read (``reads.py``: of the
    suite, the adapter protocol only for a graded submission), the parts to look for."""
    own = own_folder_of(spec, limits, builtin=builtin)
    allowed = reads.worker_reads(own, suite="code" if builtin or not limits.hide_suite_code else "api",
                                 allow_read=tuple(str(Path(p).resolve()) for p in limits.allow_read))
    path = reads.worker_path(allowed)  # first: it may make the suite's folder listable
    notebook = notebooks.parse(spec)
    # a notebook's adapter file is read here and sent: the worker reads the notebook's folder, not the file's
    adapter_source = Path(notebook.adapter_file).read_text() if notebook and notebook.adapter_file else None
    return {"spec": spec, "limits": limits.as_dict(), "reads": allowed.as_dict(), "path": path,
            "landlock": limits.landlock, "threads": threads, "parts": list(ADAPTER_PARTS),
            "model_parts": list(MODEL_PARTS), "dtype": dtype, "adapter_source": adapter_source}


def own_folder_of(spec: str, limits: Limits, *, builtin: bool) -> Path | None:
    """The folder the implementation may read as its own: the submission's (``limits.own_folder``), else its
    file's or package's; None for a built-in (the suite's code, which the worker reads as such)."""
    if limits.own_folder:
        return Path(limits.own_folder).resolve()
    return None if builtin else reads.own_folder(importing.split_target(spec)[0])


class _NeverForked(Exception):
    """The warm process died before it forked the worker (its pipes closed unanswered): start one cold."""


class RemoteException(Exception):
    """An exception the candidate raised in the worker, re-raised here under its type's name."""


_REMOTE_TYPES: dict[str, type] = {}


def remote_exception(name: str, message: str) -> Exception:
    name = name if isinstance(name, str) and name.isidentifier() and len(name) <= 80 else "Exception"
    if name not in _REMOTE_TYPES:
        _REMOTE_TYPES[name] = type(name, (RemoteException,), {"__module__": "worker"})
    return _REMOTE_TYPES[name](message)


class ProxyAdapter:
    """The candidate's adapter as seen from the grader: conventions and parts, calls over a pipe."""

    converts_in_worker = True  # framework arrays (``frameworks``) are made and read in the worker, never here

    def __init__(self, spec: str, *, limits: Limits, timeout_s: float | None, threads: int = 1, builtin: bool,
                 wait: bool = True, warm=None, dtype: str | None = None):
        self.spec, self.limits, self.timeout_s, self.threads = spec, limits, timeout_s, threads
        self._start = start_message(spec, limits, builtin=builtin, threads=threads, dtype=dtype)
        self._own_folder = own_folder_of(spec, limits, builtin=builtin)
        # every worker of this implementation forks from the run's warm process (warm.py), unless it ships its own
        # numpy or torch, which only a cold worker imports
        self._warm = None if warm is None or shadows_preloaded(self._own_folder) else warm
        self.refused: list = []  # what the candidate tried that the sandbox refused (worker.Refusals)
        self.refused_total = 0
        self._deadline = time.monotonic() + limits.total_s
        self._generation, self._restarts, self._seed, self._release = 0, 0, None, []
        self._worker: Worker | None = None
        self.compile_clock = frameworks.CompileClock()  # the worker's JAX compilations, as it tells them
        self._outputs: list[dict] = []
        self.load_error: str | None = None
        self._hello: dict | None = None
        self.last_account: dict | None = None  # what the worker said of the last call (whose code answered)
        devices = reads.device_nodes(self._own_folder) if limits.hide_suite_code and self._own_folder else []
        if devices:
            self.load_error = (f"the submission holds device nodes ({', '.join(devices[:3])}): a submission is"
                               " files and folders; it is not run. Fix: remove them")
        self._worker, self._generation = (self._new_worker(), 1) if not devices else (None, 0)
        # what the grader built around it: its own facts
        self.walls = self._worker.walls_record() if self._worker is not None else Worker.no_walls()
        if wait:
            self.wait()

    def wait(self) -> dict:
        """The worker's hello (waiting for it the first time): conventions, parts; ``LoadError`` if the
        implementation could not be loaded (kept in ``load_error``)."""
        if self._hello is None:
            if self.load_error is not None:
                raise LoadError(self.load_error)
            worker, self._worker = self._worker, None
            try:
                worker, hello = self._hello_of(worker)
            except LoadError as exc:
                self.load_error = str(exc)
                raise
            self._worker, self._hello = worker, hello
            self.conventions = hello["conventions"]
            self.load_warnings: list[str] = hello["warnings"]
            self.claims = {key: hello[key] for key in ("landlock", "namespace", "private_proc", "walls")}
            # what the grader asked of the kernel, applied before any of the candidate's code ran; the worker's
            # own account (any code in it could write one) is its claim, kept apart
            self.landlock: int = self.walls["landlock_abi"]
            self.namespace: str = "bubblewrap" if self.walls["bubblewrap"] else hello["namespace"]
            self.private_proc: bool = self.walls["bubblewrap"] or hello["private_proc"]
            self._parts = [part for part in hello["parts"] if part in ADAPTER_PARTS]
            self.__conformance_supplied__ = hello["supplied"]  # conformance.provenance, checked by check_hello
            if hello["model_class_parts"] is not None:
                self.model_class = model_class_with(hello["model_class_parts"])
        return self._hello

    def __getattr__(self, name: str):
        if name.startswith("__") or "_start" not in self.__dict__:
            raise AttributeError(name)
        if self.__dict__.get("_hello") is None and (name in ADAPTER_PARTS or name in HELLO_FIELDS):
            self.wait()
            if name in self.__dict__:
                return self.__dict__[name]
        if name in self.__dict__.get("_parts", ()):
            return _Forward(self, 0, name, None)
        raise AttributeError(name)

    def __dir__(self):
        return [*super().__dir__(), *self.__dict__.get("_parts", ())]

    def __repr__(self) -> str:
        return f"ProxyAdapter({self.spec!r})"

    # -- the worker's life ----------------------------------------------------------------------
    def _start_worker(self) -> None:
        """Start a fresh worker and wait for its hello; ``LoadError`` saying what went wrong otherwise."""
        worker, _ = self._hello_of(self._new_worker())
        self._worker, self._generation = worker, self._generation + 1

    def _new_worker(self, *, cold: bool = False) -> Worker:
        return Worker(self._start, total_s=self.limits.total_s, pass_env=self.limits.pass_env, threads=self.threads,
                      warm=None if cold else self._warm)

    def _hello_of(self, worker: Worker) -> tuple[Worker, dict]:
        """(the worker, its hello); a cold one's when the warm process died before it forked this one."""
        try:
            return worker, self._await_hello(worker)
        except _NeverForked:
            worker = self._new_worker(cold=True)
            return worker, self._await_hello(worker)

    def _await_hello(self, worker: Worker) -> dict:
        # a notebook's cells run at load, each within cell_s: its load may take the worker's whole time
        load_s = self.limits.total_s if notebooks.parse(self._start["spec"]) else self.limits.load_s
        deadline = min(time.monotonic() + load_s, self._deadline)
        try:
            reply = worker.receive(deadline)
        except ChannelTimeout:
            worker.cleanup()
            raise LoadError(f"the implementation did not finish importing within {load_s:g} s"
                            " (an endless loop, or a long computation at import time?)") from None
        except WireError:
            report, output = worker.stop(), worker.output()
            worker.cleanup()
            if worker.warm and worker.pid is None:
                raise _NeverForked from None
            raise LoadError(f"the implementation {fmt_exit(report, self.limits)} while being imported"
                            + fmt_output(output)) from None
        load_error_keys = {"load_error", "import_raised", "missing_variable", "absent_variables", "missing_module",
                           *REFUSED_KEYS}
        if not isinstance(reply, dict) or not ({"hello"} == set(reply) or "load_error" in reply
                                               and set(reply) <= load_error_keys):
            worker.cleanup()
            raise LoadError("the worker answered something that is not a hello (the import wrote to its pipe?)")
        if "load_error" in reply:
            self._note_refused(reply)
            output = worker.output()
            worker.cleanup()
            raise LoadError(self._load_error(reply) + fmt_output(output))
        try:
            hello = check_hello(reply["hello"], self.spec)
        except LoadError:
            worker.cleanup()
            raise
        self._note_refused(hello)
        return hello

    def _note_refused(self, message: dict) -> None:
        """What the worker says the sandbox refused so far (the whole list each time, bounded)."""
        refused, total = message.get("refused"), message.get("refused_total")
        if isinstance(refused, list) and isinstance(total, int):
            kept = [entry for entry in refused[:REFUSED_KEPT] if _refusal(entry)]
            if self.walls["bubblewrap"]:  # a read of what is absent from its sandbox counts where it exists here
                absent = [entry for entry in kept if entry[0] != "write" and not os.path.lexists(entry[1])]
                kept = [entry for entry in kept if entry not in absent]
                total -= sum(times for _, _, times in absent)  # nothing was refused there: it is nowhere
            self.refused = [[what, path[:300], times] for what, path, times in kept]
            self.refused_total = max(total, sum(times for _, _, times in self.refused))

    def _load_error(self, reply: dict) -> str:
        """The worker's load error, and what the environment has to do with it when the implementation's own
        code raised (``environment.load_note``), or where a module it did not find lies here (``_unread_module``)."""
        message = str(reply["load_error"])
        unread = self._unread_module(reply.get("missing_module"))
        if unread:
            return f"{message}. {unread}"
        if not reply.get("import_raised"):
            return message
        missing = variable_name(reply.get("missing_variable"))
        if self.refused and missing is None:  # what it tried to read says more than the variables removed
            return f"{message.removesuffix('. ' + importing.FIX_IMPORT)}. {self._reads_note()}"
        looked_up = reply.get("absent_variables")
        looked_up = [name for name in looked_up if isinstance(name, str)] if isinstance(looked_up, list) else []
        note = environment.load_note(self.limits.pass_env, missing, looked_up)
        return f"{message}. {note}" if note else message

    def _unread_module(self, name) -> str:
        """When the worker did not find a module that this process finds outside what the worker may read (a site
        folder added by a .pth file, an editable install's checkout): where it lies, and the fix. Only a plain
        top-level name is looked up, and only here: nothing of it is imported."""
        if not isinstance(name, str) or not name.isidentifier():
            return ""
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            return ""
        if spec is None or spec.origin in (None, "built-in", "frozen"):
            return ""
        folder = Path(spec.origin).resolve().parent
        folder = folder.parent if spec.submodule_search_locations else folder
        trees = [Path(tree) for tree in self._start["reads"]["trees"]]
        if any(folder == tree or folder.is_relative_to(tree) for tree in trees):
            return ""
        return (f"{name} is installed here in {folder}, outside the Python installation (a site folder added by a"
                " .pth file, or an editable install's checkout), which the sandboxed worker does not read. Fix:"
                f" --allow-read {folder}, or --no-isolate to run in this process")

    def _reads_note(self) -> str:
        """What the sandbox refused, what the worker may read, and the fixes."""
        tried = "; ".join(f"{what} {path}" for what, path, _ in self.refused[:3])
        own = self._own_folder or "none: a built-in"
        return (f"The sandbox refused: {tried}. The worker reads only its own folder ({own}), Python and its"
                " packages, and its temporary folder. If the implementation needs more: --allow-read PATH"
                " (repeatable), or --no-isolate to run in this process")

    def _ensure_worker(self, label: str) -> Worker:
        if self._worker is not None:
            return self._worker
        if self._restarts >= self.limits.max_restarts:
            raise AdapterError(f"{label}: not run: the worker died {self._restarts} times in this run, the most"
                               " allowed", part=label, expected="a result", actual="no worker")
        self._restarts += 1
        try:
            self._start_worker()
        except LoadError as exc:
            raise AdapterError(f"{label}: the worker could not be restarted: {exc}", part=label,
                               expected="a result", actual="no worker") from None
        return self._worker

    def _retire(self) -> dict:
        worker, self._worker = self._worker, None
        if worker is None:
            return {}
        report = worker.stop()
        self._outputs.append({**worker.output(), **worker.usage()})
        worker.cleanup()
        return report

    def close(self, *, wait: bool = True) -> None:
        """End the worker. ``wait=False`` (the end of a run): only tell it to stop, so that it winds down
        (a large worker takes a while to die) while the grader prints its report;
        ``stop_all_workers`` (the CLI's last step, and at exit) then waits for it and removes its folder."""
        if wait or self._worker is None:
            self._retire()
            return
        worker, self._worker = self._worker, None
        self._outputs.append(worker.output())
        worker.begin_stop()

    def __del__(self):
        if self.__dict__.get("_worker") is not None:
            self.close()

    def seed(self, seed: int) -> None:
        """Seed the worker's torch generator before the next call (``plugin.seed_torch``)."""
        self._seed = int(seed)

    # -- calling --------------------------------------------------------------------------------
    def call(self, target: int, part: str, generation: int | None, args, kwargs) -> Any:
        label = part if target == 0 else f"model.{part}"
        if self._hello is None:
            try:
                self.wait()
            except LoadError as exc:
                raise AdapterError(f"{label}: not run: the implementation could not be loaded: {exc}", part=label,
                                   expected="a loaded implementation", actual="load error") from None
        if generation is not None and generation != self._generation:
            raise AdapterError(f"{label}: the worker that built this model died earlier in this run; the model"
                               " is gone", part=label, expected="a result", actual="no model")
        if time.monotonic() >= self._deadline:
            raise AdapterError(f"{label}: not run: the total time limit of {self.limits.total_s:g} s for this"
                               " implementation ran out", part=label, expected="a result", actual="no time left")
        worker = self._ensure_worker(label)
        request = {"target": target, "part": part, "args": list(args), "kwargs": dict(kwargs),
                   "seed": self._seed, "release": self._release}
        self._seed, self._release = None, []
        deadline = min(time.monotonic() + self._call_limit(), self._deadline)
        try:
            worker.channel.send(request, deadline=deadline)
            reply = self._answer(worker, deadline)
        except ChannelTimeout:
            self._retire()
            raise AdapterError(f"{label} hung: no answer within {self._call_limit():g} s; the worker was killed."
                               " Likely cause: an endless loop", part=label,
                               expected=f"a result within {self._call_limit():g} s", actual="no result") from None
        except WireError as exc:
            closed = isinstance(exc, ChannelClosed)
            report = self._retire()
            what = fmt_exit(report, self.limits) if closed else f"sent a malformed answer ({exc})"
            raise AdapterError(f"{label}: the implementation {what} while running {label}; the next check gets a"
                               " fresh worker" + fmt_output(self._outputs[-1] if self._outputs else {}),
                               part=label, expected="a result", actual=what) from None
        except BaseException:  # the part's timeout (SIGALRM), Ctrl-C: the worker's state is unknown
            self._retire()
            raise
        return self._unpack(reply, label, target)

    def _answer(self, worker: Worker, deadline: float) -> Any:
        """The worker's answer to the call just sent. The news of JAX's compilations that may come before it move the
        deadline: while one runs only the total limit holds, and each one's duration is added, up to
        ``frameworks.MAX_CREDIT_S`` for the call. ``compile_clock`` keeps them for the part's own time limit."""
        credit, clock = 0.0, self.compile_clock
        clock.depth = 0  # a call the worker left in the middle of a compilation (killed, timed out) is over
        while True:
            waiting = clock.compiling and credit < frameworks.MAX_CREDIT_S
            reply = worker.receive(self._deadline if waiting else deadline, make_model=self.make_model)
            if not (isinstance(reply, dict) and len(reply) == 1 and set(reply) <= {"compiling", "compiled"}):
                return reply
            seconds = reply.get("compiled")
            if "compiling" in reply:
                clock.started()
            elif isinstance(seconds, int | float) and seconds >= 0:
                seconds = min(float(seconds), frameworks.MAX_CREDIT_S - credit)
                credit += seconds
                deadline = min(deadline + seconds, self._deadline)
                clock.ended(seconds)

    def _call_limit(self) -> float:
        if self.limits.call_s is not None:
            return self.limits.call_s
        return self.timeout_s + 5.0 if self.timeout_s else self.limits.total_s

    def _unpack(self, reply: Any, label: str, target: int) -> Any:
        refused_now = isinstance(reply, dict) and "refused" in reply  # the sandbox refused something in this call
        if refused_now:
            self._note_refused(reply)
            reply = {key: value for key, value in reply.items() if key not in REFUSED_KEYS}
        if isinstance(reply, dict) and set(reply) == {"ok", "account"}:
            self.last_account = checked_account(reply["account"])
            return reply["ok"]
        self.last_account = None
        if isinstance(reply, dict) and len(reply) == 1:
            (kind, value), = reply.items()
            if kind == "ok":
                return value
            if kind == "not_implemented":
                raise NotImplementedError(str(value))
            if kind == "bad_value" and isinstance(value, dict):
                raise frameworks.BoundaryValueError(str(value.get("what", ""))[:2000],
                                                    str(value.get("likely_cause", ""))[:2000])
            if kind == "raised" and isinstance(value, dict):
                note = environment.call_note(self.limits.pass_env, variable_name(value.get("missing_variable")))
                if refused_now and not note:
                    note = f" ({self._reads_note()})"
                raise remote_exception(value.get("type"), str(value.get("message", "")) + note)
        self._retire()
        raise AdapterError(f"{label}: the worker's answer is not a result ({str(reply)[:100]})", part=label,
                           expected="a result", actual="garbage")

    def make_model(self, handle: int, parts: list[str]) -> ProxyModel:
        return ProxyModel(self, handle, self._generation, [p for p in parts if p in MODEL_PARTS])

    def release(self, handle: int, generation: int) -> None:
        if generation == self._generation:
            self._release.append(handle)

    # -- the report -----------------------------------------------------------------------------
    def unloaded_summary(self) -> dict:
        """The report's record of a worker that could not load the implementation: its limits, the walls around
        it, what the sandbox refused while it tried (as the worker tells it)."""
        return {"isolated": True, "limits": self.limits.as_dict(), "walls": self.walls, **self._refused_summary(),
                "worker_claims": {**self._refused_summary()}}

    def _refused_summary(self) -> dict:
        return {"refused": [{"what": what, "path": path, "times": times} for what, path, times in self.refused],
                "refused_total": self.refused_total}

    def summary(self) -> dict:
        outputs = self._outputs + ([{**self._worker.output(), **self._worker.usage()}] if self._worker else [])
        return {
            "isolated": True,
            "landlock_abi": self.landlock,
            "reads_confined": self.walls["bubblewrap"] or self.landlock >= sandbox.READS_ABI,
            "pid_namespace": bool(self.namespace),
            "private_proc": self.private_proc,
            "walls": self.walls,
            # what the worker says of itself: code that runs in it could have written any of it
            "worker_claims": {"landlock_abi": self.claims["landlock"], "namespace": self.claims["namespace"],
                              "private_proc": self.claims["private_proc"], **self.claims["walls"],
                              **self._refused_summary()},
            **self._refused_summary(),
            "restarts": self._restarts,
            "limits": self.limits.as_dict(),
            "output_bytes": sum(o["bytes"] for o in outputs),
            "worker_cpu_s": round(sum(o.get("cpu_s") or 0 for o in outputs), 3),
            "worker_max_rss_mib": max((o.get("max_rss_mib") or 0 for o in outputs), default=0),
            "output_head": (outputs[0]["head"] if outputs else "")[:4096],
        }


HELLO_FIELDS = ("conventions", "load_warnings", "landlock", "namespace", "private_proc", "model_class", "_parts")
WORKER_WALLS = ("read_only_mounts", "tmpfs", "own_network", "calls_filtered")  # what the worker says it built itself
REFUSED_KEYS = ("refused", "refused_total")
REFUSED_KEPT = 20


def _refusal(entry: Any) -> bool:
    return (isinstance(entry, list) and len(entry) == 3 and entry[0] in ("read", "list", "write")
            and isinstance(entry[1], str) and type(entry[2]) is int)


class _Forward:
    """A bound part: ``proxy.layer_norm(...)`` -> a call in the worker."""

    def __init__(self, proxy: ProxyAdapter, target: int, part: str, generation: int | None):
        self.proxy, self.target, self.part, self.generation = proxy, target, part, generation
        self.__name__ = part

    def __call__(self, *args, **kwargs):
        self.conformance_account = None
        value = self.proxy.call(self.target, self.part, self.generation, args, kwargs)
        self.conformance_account = self.proxy.last_account  # whose code answered, as the worker saw it (Ledger)
        return value


class ProxyModel:
    """A model that lives in the worker: its parts, by handle."""

    def __init__(self, proxy: ProxyAdapter, handle: int, generation: int, parts: list[str]):
        self._proxy, self._handle, self._generation, self._parts = proxy, handle, generation, parts

    def __getattr__(self, name: str):
        if name in self.__dict__.get("_parts", ()):
            return _Forward(self._proxy, self._handle, name, self._generation)
        raise AttributeError(name)

    def __del__(self):
        proxy = self.__dict__.get("_proxy")
        if proxy is not None:
            proxy.release(self._handle, self._generation)


def model_class_with(parts: list[str]) -> type:
    """A stand-in for the adapter's ``model_class``: it has exactly the declared model parts."""
    def declared(self, *args, **kwargs):
        raise TypeError("a description of the worker's model class, not callable here")

    return type("DeclaredModel", (), {part: declared for part in parts if part in MODEL_PARTS})


def check_hello(hello: Any, spec: str) -> dict:
    """The worker's hello as the grader uses it: plain data checked, the conventions rebuilt and validated as
    in-process loading does (``declarations.check_declarations``: a ``LoadError`` naming the fix), the warnings."""
    from conformance.boundary.declarations import check_declarations

    if not isinstance(hello, dict) or not isinstance(hello.get("parts"), list) \
            or not isinstance(hello.get("public"), list) or not all(isinstance(n, str) for n in hello["public"]):
        raise LoadError("the worker's hello is malformed (the import wrote to its pipe?)")
    declared = hello.get("conventions")
    try:
        conventions = Conventions(**declared) if isinstance(declared, dict) else None
    except (TypeError, ValueError) as exc:
        raise LoadError(f"the worker's hello has conventions that are not Conventions' fields: {exc}") from None
    notes = hello.get("notes") if isinstance(hello.get("notes"), list) else []
    hello["warnings"] = [str(note)[:500] for note in notes[:notebooks.NOTES_SHOWN + 2]] \
        + check_declarations(conventions, hello["public"][:1000], spec)
    hello["conventions"] = conventions
    hello["landlock"] = hello.get("landlock") if type(hello.get("landlock")) is int else 0
    hello["namespace"] = hello.get("namespace") if hello.get("namespace") in ("user+pid", "pid") else ""
    hello["private_proc"] = hello.get("private_proc") is True
    claimed = hello.get("walls") if isinstance(hello.get("walls"), dict) else {}
    hello["walls"] = {key: claimed.get(key) is True for key in WORKER_WALLS}
    hello.setdefault("model_class_parts", None)
    supplied = hello.get("supplied")
    hello["supplied"] = {part: rec for part, rec in (supplied.items() if isinstance(supplied, dict) else ())
                         if part in PARTS and checked_record(rec) is not None}
    return hello


def _text(value, limit: int = 400) -> str | None:
    return value[:limit] if isinstance(value, str) else None


def checked_record(rec: Any) -> dict | None:
    """A provenance record from the worker, as plain short strings, or None when it is not one."""
    if not isinstance(rec, dict) or _text(rec.get("by")) is None:
        return None
    supplies = rec.get("supplies") if isinstance(rec.get("supplies"), list) else []
    settings = rec.get("settings") if isinstance(rec.get("settings"), dict) else {}
    return {"by": _text(rec["by"]), "supplies": [s for s in map(_text, supplies[:10]) if s],
            "settings": {k[:80]: _text(v) for k, v in list(settings.items())[:10] if isinstance(k, str) and _text(v)},
            "note": _text(rec.get("note")) or ""}


def checked_account(account: Any) -> dict | None:
    """What the worker says of one call (supplied, converted): validated, shortened; never trusted further, since
    a record only ever withholds credit."""
    if not isinstance(account, dict):
        return None
    converted = account.get("converted") if isinstance(account.get("converted"), list) else []
    fields = ("converter", "aspect", "what", "deviation")
    entries = [{k: _text(entry.get(k)) for k in fields} for entry in converted[:20] if isinstance(entry, dict)]
    return {"supplied": checked_record(account.get("supplied")),
            "converted": [e for e in entries if e["converter"] and e["aspect"]]}


def variable_name(value: Any) -> str | None:
    """The name of a missing variable as the worker reported it; None for anything that cannot be one."""
    return value if isinstance(value, str) and 0 < len(value) <= 256 and "=" not in value else None


def fmt_exit(report: dict, limits: Limits) -> str:
    """"exited with status 0", "was killed: it used up its CPU-time limit (60 s)", ..."""
    if report.get("out_of_memory"):  # the control group's count, which the worker cannot change
        return (f"was killed by the kernel: it exceeded its memory limit ({limits.memory_mib} MiB, shared memory,"
                " memfd and temporary files counted; --worker-memory)")
    if "exit" in report:
        return f"exited with status {report['exit']}"
    if "signal" in report:
        number = report["signal"]
        name = signal.Signals(number).name if number in signal.Signals._value2member_map_ else f"signal {number}"
        if report.get("reason"):
            return f"was stopped ({name}: {report['reason']})"
        cause = SIGNAL_CAUSES.get(number, "").format(**limits.as_dict())
        return f"was killed by {name}" + (f": {cause}" if cause else "")
    return "ended without saying how"


def fmt_output(output: dict, lines: int = 6) -> str:
    text = (output or {}).get("tail", "").strip()
    if not text:
        return ""
    shown = "\n    ".join(text.splitlines()[-lines:])
    return f"\n  its output ended with ({output['bytes']} bytes in all):\n    {shown}"


def load_isolated(spec: str, *, timeout_s: float | None, limits: Limits | None = None, threads: int = 1,
                  builtin: bool = False, wait: bool = True, warm=None, dtype: str | None = None):
    """A ``Candidate`` whose adapter runs in a worker process (``LoadError`` if it cannot load). With
    ``wait=False`` the worker imports the implementation while the caller goes on (pytest's start-up and
    collection); the first use waits, and ``ProxyAdapter.load_error`` says if it failed. ``warm``: the run's
    ``warm.WarmWorkers``, which its workers fork from (None: each starts a new interpreter)."""
    proxy = ProxyAdapter(worker_spec(spec), limits=limits or Limits(), timeout_s=timeout_s, threads=threads,
                         builtin=builtin, wait=wait, warm=warm, dtype=dtype)
    return IsolatedCandidate(proxy, name=spec, dtype=dtype, **({"timeout_s": timeout_s} if timeout_s else {}))


class IsolatedCandidate(Candidate):
    """A ``Candidate`` whose load warnings come from the worker, when its hello arrives."""

    @property
    def load_warnings(self) -> list[str]:
        return self.adapter.load_warnings


def worker_spec(spec: str) -> str:
    """The spec as the worker (another working directory) must read it: a path made absolute, after the
    same existence check as in-process loading."""
    from conformance.boundary.naming import resolve

    notebook = notebooks.parse(resolve(spec))
    if notebook is not None:
        for path in filter(None, (notebook.notebook, notebook.adapter_file)):
            if not Path(path).is_file():
                raise LoadError(f"no file {path!r}. Fix: check the path (relative to {Path.cwd()})")
        return NotebookTarget(str(Path(notebook.notebook).resolve()), notebook.adapter_file and
                              str(Path(notebook.adapter_file).resolve()), notebook.attr).spec()
    location, attr = importing.split_target(resolve(spec))
    if not location.endswith(".py"):
        return resolve(spec)
    if not Path(location).is_file():
        raise LoadError(f"no file {location!r}. Fix: check the path (relative to {Path.cwd()})")
    return str(Path(location).resolve()) + (f":{attr}" if attr else "")
