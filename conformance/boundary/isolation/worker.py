"""The worker: the process that imports the candidate and answers its calls.

The child of the supervisor (``supervisor.main``, which forks it and calls ``serve`` with the request and
response pipes), loaded like it from the sources the grader sends, under the package name ``app`` (kept out of
``sys.modules``: trampoline.py). It lowers its resource limits, mounts its own /proc, applies Landlock, imports
the candidate and serves calls: each request is a part name with plain-data arguments (``wire``), each answer a
plain-data result, a ``NotImplementedError`` reason, or an exception's type and message. Models stay here; the
grader holds handles. Nothing here imports the suite: what a candidate that looks at its stack or its modules
finds is this program, not a test runner. What the sandbox refuses it while it runs is noted (``Refusals``)
and reported with the answers.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import gc
import inspect
import os
import sys
from pathlib import Path

# Relative: these modules are ``app.*`` here (trampoline.py), ``conformance.boundary.isolation.*`` in the grader.
# All are imported now: once the candidate runs, the package is gone from sys.modules and a later import would fail.
from . import environment, frameworks, importing, notebooks, sandbox, wire


def serve(request_fd: int, response_fd: int, namespace: str) -> None:
    """Load the candidate as the start message says, say hello (or why it could not load), answer calls until
    the grader closes the request pipe."""
    keep_freed_memory()
    channel = wire.Channel(request_fd, response_fd)
    start = channel.receive()
    spec, refused, absent = start["spec"], Refusals(), environment.AbsentLookups()
    absent.watch()
    try:
        adapter, hello = load(start, namespace, refused)
    except BaseException as exc:  # noqa: BLE001 - whatever the import does, the grader hears of it
        channel.send({**load_error(exc, spec), "absent_variables": absent.names, **refused.report()})
        return
    channel.send({"hello": {**hello, **refused.report()}})
    model_parts, conventions = start["model_parts"], hello["conventions"]
    del start, hello  # the frames above the candidate's calls hold nothing of the grader's request
    # What the import made (torch, the candidate) lives as long as the worker: frozen, a full collection walks
    # only what the calls made (models built by the hundred would otherwise make each walk torch's objects again).
    gc.freeze()
    Server(adapter, channel, refused, model_parts, conventions).run()


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters


def keep_freed_memory() -> None:
    """Serve allocations up to 32 MB from the heap and keep what is freed (glibc ``mallopt``). A fresh
    process maps every allocation above 128 KiB anew and unmaps it when freed, so each of the candidate's
    tensors costs page faults and a zero-fill of its memory, which the grader's long-lived heap (in-process
    runs) mostly does not pay."""
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(M_MMAP_THRESHOLD, 32 * 2**20)
        libc.mallopt(M_TRIM_THRESHOLD, 2**30)
    except (OSError, AttributeError):  # not glibc: its allocator's own defaults
        pass


def load(start: dict, namespace: str, refused: Refusals):
    """Confine this process, then import the candidate; (adapter, hello). The grader validates what the hello
    declares (``declarations.check_declarations``)."""
    limits = start["limits"]
    # before /proc is replaced: the process limit counts this user's processes there
    sandbox.set_limits(memory_mib=limits["memory_mib"], cpu_s=limits["cpu_s"], files=limits["files"],
                       file_mib=limits["file_mib"], processes=limits["processes"])
    in_bubblewrap = start.get("in_bubblewrap", False)
    # bubblewrap gave it a /proc of its own PID namespace; else it mounts one where it entered a namespace
    mounted_proc = not in_bubblewrap and bool(namespace) and sandbox.mount_private_proc()
    # without bubblewrap, in the mount namespace it made for /proc: the walls bubblewrap would have built
    frozen = mounted_proc and sandbox.freeze_file_system(Path(start["temp_dir"]))
    own_network = not in_bubblewrap and bool(namespace) and sandbox.leave_network_and_ipc()
    if namespace:
        sandbox.drop_capabilities()
    reads, writable = sandbox.Reads(**start["reads"]), [Path(start["temp_dir"])]
    private_proc = in_bubblewrap or mounted_proc
    landlock = sandbox.restrict(writable=writable, reads=reads, private_proc=private_proc) \
        if start.get("landlock", True) else 0
    calls_filtered = sandbox.narrow_system_calls()
    if landlock:  # what the sandbox refuses, as far as Python's own opens and listings show it
        refused.watch(sandbox.read_rules(reads, private_proc), writable, absent_too=start.get("in_bubblewrap", False))
    notebook, notes = notebooks.parse(start["spec"]), []
    if notebook is not None:  # its cells run here, under these walls; the adapter file's text came with the start
        target, notes = importing.load_notebook(notebook, adapter_source=start.get("adapter_source"),
                                                seconds=limits["cell_s"], hard_stop=True)
    else:
        target = importing.import_target(start["spec"])
    adapter, dtype = target() if inspect.isclass(target) else target, start.get("dtype")
    if callable(getattr(adapter, "with_dtype", None)):  # without it, the grader refuses what the hello declares
        try:
            adapter = frameworks.switch_dtype(adapter, dtype)
        except Exception as exc:  # as in process (loading.load): the adapter's with_dtype, not its import, failed
            raise importing.ImportFailed(f"{start['spec']}: with_dtype({dtype!r}) raised {type(exc).__name__}:"
                                         f" {exc}") from exc
    limit_threads(start.get("threads", 1))
    hello = describe_adapter(adapter, start["parts"], start["model_parts"])
    hello.update(notes=notes, landlock=landlock, namespace=namespace, private_proc=private_proc,
                 walls={"read_only_mounts": in_bubblewrap or frozen, "tmpfs": in_bubblewrap or frozen,
                        "own_network": in_bubblewrap or own_network,
                        "calls_filtered": calls_filtered})
    return adapter, hello


def describe_adapter(adapter, parts: list[str], model_parts: list[str]) -> dict:
    """What the grader needs to stand in for the adapter: its conventions (None unless they are the protocol's
    ``Conventions``), its parts, its public callables' names (for the misspelt-part warnings), the records of
    what the suite's helpers supply (only an adapter that imported them can have any), its model's parts."""
    protocol, provenance = sys.modules.get("conformance.adapter"), sys.modules.get("conformance.provenance")
    conventions = getattr(adapter, "conventions", None)
    declared = protocol is not None and isinstance(conventions, protocol.Conventions)
    model_class = getattr(adapter, "model_class", None)
    provided = [part for part in parts if callable(getattr(adapter, part, None))]
    return {
        "conventions": conventions.as_dict() if declared else None,
        "public": [name for name in dir(adapter) if not name.startswith("_") and callable(getattr(adapter, name))],
        "parts": provided,
        "supplied": provenance.static_records(adapter, provided) if provenance is not None else {},
        "model_class_parts": None if model_class is None
        else [part for part in model_parts if callable(getattr(model_class, part, None))],
    }


def load_error(exc: BaseException, spec: str) -> dict:
    """The reply to a failed load: its message, whether the implementation's own code raised or exited (not
    a name that is not there), and the variable whose lookup failed, if one did (``environment``)."""
    failed = isinstance(exc, importing.ImportFailed)
    raised = not failed or exc.__cause__ is not None or exc.__context__ is not None
    missing = environment.missing_variable(exc)
    return {"load_error": load_error_message(exc, spec, missing), "import_raised": raised, "missing_variable": missing,
            "missing_module": missing_module(exc)}


def missing_module(exc: BaseException | None) -> str | None:
    """The top-level name of the module a ``ModuleNotFoundError`` behind ``exc`` did not find, if one did."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, ModuleNotFoundError) and isinstance(exc.name, str) and exc.name:
            return exc.name.split(".")[0]
        exc = exc.__cause__ or exc.__context__
    return None


def load_error_message(exc: BaseException, spec: str, missing: str | None = None) -> str:
    """The load error's text. When a variable's lookup failed, without a fix: the grader, which knows what the
    sandbox removed, adds it."""
    failed = isinstance(exc, importing.ImportFailed)
    raised = exc.__cause__ if failed and exc.__cause__ is not None else exc
    if missing is not None and not isinstance(raised, (importing.ImportFailed, SystemExit)):
        return f"importing {spec} raised {type(raised).__name__}: {raised}"
    if failed:
        return str(exc)
    if isinstance(exc, SystemExit):
        return importing.exited_at_import(exc)
    return f"importing {spec} raised {type(exc).__name__}: {exc}. {importing.FIX_IMPORT}"


def limit_threads(threads: int) -> None:
    torch = sys.modules.get("torch")
    if torch is not None and threads > 0:
        torch.set_num_threads(threads)


class Refusals:
    """What the candidate tried that the sandbox refuses: reading or listing outside what it may read, writing
    outside its temporary directory. Seen by an audit hook (``sys.addaudithook``) on Python's own opens and
    listings, judged by the rules Landlock applies; what native code does directly is not seen (Landlock still
    refuses it). Only paths that exist are noted for reads: a missing file is not the sandbox's refusal. In
    bubblewrap what it may not read is not there at all: every such path is noted, and the grader keeps those that
    exist on its side."""

    KEPT = 20  # distinct attempts named; the rest are counted
    WATCHED = frozenset({"open", "os.listdir", "os.scandir"})  # and "import", in bubblewrap
    WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

    def __init__(self):
        self.rights: dict[str, int] = {}
        self.found: dict[tuple[str, str], int] = {}
        self.total = self.reported = 0
        self.busy = False
        self.absent_too = False  # bubblewrap: a path outside the rules is absent here, refused all the same
        self.import_path_seen: set = set()

    def watch(self, read_rules: list[tuple[str, int]], writable: list[Path], *, absent_too: bool = False) -> None:
        self.absent_too = absent_too
        for path, access in [*read_rules, *((str(p), sandbox.WRITE_FILE | sandbox.READ) for p in writable),
                             ("/dev/null", sandbox.READ_FILE | sandbox.WRITE_FILE)]:
            real = os.path.realpath(path)
            self.rights[real] = self.rights.get(real, 0) | access
        sys.addaudithook(self.hook)

    def hook(self, event: str, args: tuple) -> None:
        if event == "import" and self.absent_too and not self.busy:
            self.busy = True
            try:
                self.judge_import_path(args[2] if len(args) > 2 else None)
            except BaseException:  # noqa: BLE001, S110 - as below
                pass
            finally:
                self.busy = False
            return
        if event not in self.WATCHED or self.busy:
            return
        self.busy = True
        try:
            self.judge(event, args)
        except BaseException:  # noqa: BLE001, S110 - a hook that raises would fail the candidate's own call
            pass
        finally:
            self.busy = False

    def judge(self, event: str, args: tuple) -> None:
        path = args[0] if args else None
        if isinstance(path, int):  # a file descriptor: opened before
            return
        path = os.path.abspath(os.fsdecode(path) if path is not None else ".")
        if event == "open":
            flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
            what, need = ("write", sandbox.WRITE_FILE) if flags & self.WRITES else ("read", sandbox.READ_FILE)
        else:
            what, need = "list", sandbox.READ_DIR
        if self.allows(path, need):
            return
        real = os.path.realpath(path)
        absent = what != "write" and not self.absent_too and not os.path.lexists(real)
        if (real != path and self.allows(real, need)) or absent:
            return
        self.note(what, real)

    def judge_import_path(self, path) -> None:
        """An import searches the folders of its path: one absent from the sandbox is never listed (the import
        system finds no folder there), so its listing is noted here, where a Landlock refusal would have been."""
        for entry in path if isinstance(path, list) else ():
            if entry in self.import_path_seen:
                continue
            self.import_path_seen.add(entry)
            if isinstance(entry, str) and entry and not self.allows(os.path.abspath(entry), sandbox.READ_DIR) \
                    and not os.path.lexists(entry):
                self.note("list", os.path.abspath(entry))

    def allows(self, path: str, need: int) -> bool:
        """Whether a rule on ``path`` or a folder above it grants ``need`` (Landlock's rights add up down a path)."""
        granted = 0
        while True:
            granted |= self.rights.get(path, 0)
            if granted & need:
                return True
            parent = os.path.dirname(path)
            if parent == path:
                return False
            path = parent

    def note(self, what: str, path: str) -> None:
        self.total += 1
        key = (what, path[:300])
        if key in self.found or len(self.found) < self.KEPT:
            self.found[key] = self.found.get(key, 0) + 1

    def report(self) -> dict:
        """``{"refused": [[what, path, times], ...], "refused_total": n}`` when something new was refused since the
        last report; {} otherwise (an answer then carries nothing more)."""
        if self.total == self.reported:
            return {}
        self.reported = self.total
        return {"refused": [[what, path, times] for (what, path), times in self.found.items()],
                "refused_total": self.total}


class Server:
    """Answers calls until the grader closes the pipe."""

    def __init__(self, adapter, channel, refused: Refusals, model_parts: list[str], conventions: dict | None = None):
        self.adapter, self.channel, self.refused, self.model_parts = adapter, channel, refused, model_parts
        self.conventions = conventions  # as the hello declared them: the arrays the parts take (``frameworks``)
        self.models: dict[int, object] = {}
        self.next_handle = 1
        # JAX's compilations, told to the grader as they start and end: its wait for the answer leaves them out
        self.clock = frameworks.CompileClock(on_start=lambda: self.tell({"compiling": True}),
                                             on_end=lambda seconds: self.tell({"compiled": seconds}))

    def tell(self, news: dict) -> None:
        """A message to the grader in the middle of a call (before its answer)."""
        with contextlib.suppress(wire.WireError):
            self.channel.send(news)

    def run(self) -> None:
        while True:
            try:
                request = self.channel.receive()
            except wire.ChannelClosed:
                return
            answer = self.answer(request)
            answer.update(self.refused.report())
            del request  # its large arrays are views of the channel's block: unless the candidate keeps
            try:  # them, the next message is read into the same memory (wire.Channel._read_buffers)
                self.channel.send(answer, model_handle=self.model_handle)
            except wire.ChannelClosed:
                return
            except Exception as exc:  # a result whose description itself raised (a hostile property)
                self.channel.send({"raised": {"type": type(exc).__name__,
                                              "message": f"its result could not be described: {exc}"}})
            del answer  # an answer may be a view of its arguments

    def answer(self, request: dict) -> dict:
        for handle in request.get("release", []):
            self.models.pop(handle, None)
        if request.get("seed") is not None:
            torch = sys.modules.get("torch")
            if torch is not None:
                torch.manual_seed(request["seed"])
        target = self.adapter if request["target"] == 0 else self.models.get(request["target"])
        if target is None:
            return {"raised": {"type": "LookupError", "message": "the model this call names is gone"}}
        # Whose code answered: only the suite's helpers, which the candidate imported itself, leave records
        # (conformance.provenance); a candidate that never imported them has none to read.
        provenance = sys.modules.get("conformance.provenance")
        part = request["part"] if request["target"] == 0 else f"model.{request['part']}"
        self.clock.listen()
        try:
            method = getattr(target, request["part"])
            args, kwargs = (frameworks.to_framework(request[key], self.conventions) for key in ("args", "kwargs"))
            with provenance.conversions() if provenance is not None else contextlib.nullcontext([]) as converted:
                result = method(*args, **kwargs)
            result = frameworks.from_framework(result, self.conventions)
            supplied = provenance.record_of(method, target, part) if provenance is not None else None
        except frameworks.BoundaryValueError as exc:
            return {"bad_value": {"what": str(exc), "likely_cause": exc.likely_cause}}
        except NotImplementedError as exc:
            return {"not_implemented": str(exc)}
        except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt are answers too
            return {"raised": self.describe_exception(exc)}
        if request["part"] == "build_model" and request["target"] == 0:
            self.pending_model = result
        if supplied is None and not converted:
            return {"ok": result}
        return {"ok": result, "account": {"supplied": supplied, "converted": converted}}

    def model_handle(self, value):
        if value is not getattr(self, "pending_model", None):
            return None
        handle, self.next_handle = self.next_handle, self.next_handle + 1
        self.models[handle], self.pending_model = value, None
        return handle, [part for part in self.model_parts if callable(getattr(value, part, None))]

    @staticmethod
    def describe_exception(exc: BaseException) -> dict:
        message = str(exc)[:4000]
        if isinstance(exc, SystemExit):
            message = f"the implementation called sys.exit({exc.code!r})"
        elif isinstance(exc, MemoryError):
            message = (message + " " if message else "") + "(the worker ran into its memory limit)"
        elif isinstance(exc, OSError) and exc.errno == errno.EFBIG:
            message += " (the worker's file-size limit: its stdout and stderr count; it wrote too much)"
        return {"type": type(exc).__name__, "message": message, "missing_variable": environment.missing_variable(exc)}
