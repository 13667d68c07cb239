"""The worker: ``python -I -B -m conformance.isolation.worker REQ RESP CTL STATUS`` (file descriptors).

Started by ``proxy.Worker`` in a new session, a temporary working directory and a minimal environment.
This process forks once: the parent stays small and becomes the **supervisor** (a child subreaper:
whatever the candidate starts and abandons is re-parented to it), the child becomes the **worker**.
The worker lowers its resource limits, applies Landlock, imports the candidate and serves calls: each
request is a part name with plain-data arguments (``wire``), each answer a plain-data result, a
``NotImplementedError`` reason, or an exception's type and message. Models stay here; the grader holds
handles.

The supervisor waits for the worker to exit, for the grader to close CTL (stop, or the grader died),
or for the total wall-clock limit; then it kills every process left below it, writes the worker's
exit status as one JSON line on STATUS, and exits.
"""

from __future__ import annotations

import ctypes
import errno
import gc
import json
import os
import select
import signal
import sys
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36


def main(argv: list[str]) -> int:
    request_fd, response_fd, control_fd, status_fd = (int(a) for a in argv[:4])
    total_s = float(argv[4]) if len(argv) > 4 else 3600.0
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    child = os.fork()
    if child == 0:
        os.close(control_fd)
        os.close(status_fd)
        try:
            serve(request_fd, response_fd)
        finally:
            os._exit(0)
    os.close(request_fd)
    os.close(response_fd)
    return supervise(child, control_fd, status_fd, total_s)


# -- the supervisor ------------------------------------------------------------------------------
def supervise(child: int, control_fd: int, status_fd: int, total_s: float) -> int:
    deadline, status, reason, usage = time.monotonic() + total_s, None, None, None
    poller = select.poll()
    poller.register(control_fd, select.POLLIN | select.POLLHUP)
    exited = _pidfd(child)  # readable when the worker exits (Linux 5.3+); else wait4 every 50 ms
    if exited is not None:
        poller.register(exited, select.POLLIN)
    while status is None:
        pid, raw, usage = os.wait4(child, os.WNOHANG)
        if pid == child:
            status = raw
            break
        left_ms = max(0, int((deadline - time.monotonic()) * 1000)) + 1
        events = poller.poll(50 if exited is None else min(left_ms, 60_000))
        if any(fd == control_fd for fd, _ in events):  # the grader closed CTL: stop now
            reason = "stopped by the grader"
        elif time.monotonic() > deadline:
            reason = f"total time limit of {total_s:g} s"
        else:
            continue
        os.kill(child, signal.SIGKILL)
        _, status, usage = os.wait4(child, 0)
    if exited is not None:
        os.close(exited)
    killed = kill_descendants()
    report = {"exit": os.WEXITSTATUS(status)} if os.WIFEXITED(status) else {"signal": os.WTERMSIG(status)}
    report.update(killed_descendants=killed, reason=reason,
                  cpu_s=round(usage.ru_utime + usage.ru_stime, 3), max_rss_mib=round(usage.ru_maxrss / 1024, 1))
    try:
        os.write(status_fd, (json.dumps(report) + "\n").encode())
    except OSError:
        pass
    return 0


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def kill_descendants(rounds: int = 20) -> int:
    """SIGKILL every process below this one (orphans come back to us, the subreaper); reap them."""
    killed = 0
    for _ in range(rounds):
        below = descendants(os.getpid())
        if not below:
            break
        for pid in below:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        _reap(deadline=time.monotonic() + 1.0)
    return killed


def _reap(deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.01)


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(entry.path, "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            found.append(pid)
            todo.append(pid)
    return found


# -- the worker ----------------------------------------------------------------------------------
def serve(request_fd: int, response_fd: int) -> None:
    from conformance.isolation.wire import Channel

    keep_freed_memory()
    channel = Channel(request_fd, response_fd)
    channel.worker_side = True
    start = channel.receive()
    channel.offer = bool(start.get("direct"))  # large answers: the grader copies them out (peer.py)
    try:
        adapter, hello = load(start)
    except BaseException as exc:  # noqa: BLE001 - whatever the import does, the grader hears of it
        channel.send(load_error(exc, start["spec"]))
        return
    channel.send({"hello": hello})
    # What the import made (torch, the candidate) lives as long as the worker: frozen, a full collection walks
    # only what the calls made. Without it the reference's parameter_count ran 2-3 times slower than in-process.
    gc.freeze()
    Server(adapter, channel).run()


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters


def keep_freed_memory() -> None:
    """Serve allocations up to 32 MB from the heap and keep what is freed (glibc ``mallopt``). A fresh
    process maps every allocation above 128 KiB anew and unmaps it when freed, so each of the candidate's
    tensors costs page faults and a zero-fill of its memory, which the grader's long-lived heap (in-process
    runs) mostly does not pay: perf counted 0.7 s of page faults in the worker of a certify run."""
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(M_MMAP_THRESHOLD, 32 * 2**20)
        libc.mallopt(M_TRIM_THRESHOLD, 2**30)
    except (OSError, AttributeError):  # not glibc: its allocator's own defaults
        pass


def load(start: dict):
    """Confine this process, then import and validate the candidate; (adapter, hello)."""
    import inspect

    from conformance.isolation import sandbox

    limits = start["limits"]
    sandbox.set_limits(memory_mib=limits["memory_mib"], cpu_s=limits["cpu_s"], files=limits["files"],
                       file_mib=limits["file_mib"], processes=limits["processes"])
    landlock = 0
    if start.get("landlock", True):
        landlock = sandbox.restrict(writable=[Path(start["temp_dir"])], hidden=[Path(p) for p in start["hidden"]])
    from conformance.loading import import_target, validate

    target = import_target(start["spec"])
    adapter = target() if inspect.isclass(target) else target
    warnings = validate(adapter, start["spec"])
    limit_threads(start.get("threads", 1))
    return adapter, describe_adapter(adapter, warnings, landlock)


def describe_adapter(adapter, warnings: list[str], landlock: int) -> dict:
    from conformance.adapter import ADAPTER_PARTS, MODEL_PARTS
    from conformance.provenance import static_records

    model_class = getattr(adapter, "model_class", None)
    parts = [part for part in ADAPTER_PARTS if callable(getattr(adapter, part, None))]
    return {
        "conventions": adapter.conventions.as_dict(),
        "parts": parts,
        "supplied": static_records(adapter, parts),
        "model_class_parts": None if model_class is None
        else [part for part in MODEL_PARTS if callable(getattr(model_class, part, None))],
        "warnings": list(warnings),
        "landlock": landlock,
        "pid": os.getpid(),
    }


def load_error(exc: BaseException, spec: str) -> dict:
    """The reply to a failed load: its message, whether the implementation's own code raised or exited (not
    a check of the adapter), and the variable whose lookup failed, if one did (``environment``)."""
    from conformance.errors import LoadError
    from conformance.isolation.environment import missing_variable

    raised = not isinstance(exc, LoadError) or exc.__cause__ is not None or exc.__context__ is not None
    missing = missing_variable(exc)
    return {"load_error": load_error_message(exc, spec, missing), "import_raised": raised, "missing_variable": missing}


def load_error_message(exc: BaseException, spec: str, missing: str | None = None) -> str:
    """The load error's text. When a variable's lookup failed, without a fix: the grader, which knows what the
    sandbox removed, adds it."""
    from conformance.errors import LoadError

    raised = exc.__cause__ if isinstance(exc, LoadError) and exc.__cause__ is not None else exc
    if missing is not None and not isinstance(raised, (LoadError, SystemExit)):
        return f"importing {spec} raised {type(raised).__name__}: {raised}"
    if isinstance(exc, LoadError):
        return str(exc)
    if isinstance(exc, SystemExit):
        return (f"the implementation exited with status {exc.code} while being imported (sys.exit at import"
                " time: put the script's own code under `if __name__ == '__main__':`)")
    return f"importing {spec} raised {type(exc).__name__}: {exc}. Fix the file's import-time code"


def limit_threads(threads: int) -> None:
    torch = sys.modules.get("torch")
    if torch is not None and threads > 0:
        torch.set_num_threads(threads)


class Server:
    """Answers calls until the grader closes the pipe."""

    def __init__(self, adapter, channel):
        self.adapter, self.channel = adapter, channel
        self.models: dict[int, object] = {}
        self.next_handle = 1

    def run(self) -> None:
        from conformance.isolation.wire import ChannelClosed

        while True:
            try:
                request = self.channel.receive()
            except ChannelClosed:
                return
            answer = self.answer(request)
            del request  # its large arrays are views of the channel's block: unless the candidate keeps
            try:  # them, the next message is read into the same memory (wire.Channel._read_buffers)
                self.channel.send(answer, model_handle=self.model_handle)
            except ChannelClosed:
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
        from conformance.provenance import conversions, record_of

        part = request["part"] if request["target"] == 0 else f"model.{request['part']}"
        try:
            method = getattr(target, request["part"])
            with conversions() as converted:
                result = method(*request["args"], **request["kwargs"])
            supplied = record_of(method, target, part)
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
        from conformance.adapter import MODEL_PARTS

        handle, self.next_handle = self.next_handle, self.next_handle + 1
        self.models[handle], self.pending_model = value, None
        return handle, [part for part in MODEL_PARTS if callable(getattr(value, part, None))]

    @staticmethod
    def describe_exception(exc: BaseException) -> dict:
        message = str(exc)[:4000]
        if isinstance(exc, SystemExit):
            message = f"the implementation called sys.exit({exc.code!r})"
        elif isinstance(exc, MemoryError):
            message = (message + " " if message else "") + "(the worker ran into its memory limit)"
        elif isinstance(exc, OSError) and exc.errno == errno.EFBIG:
            message += " (the worker's file-size limit: its stdout and stderr count; it wrote too much)"
        from conformance.isolation.environment import missing_variable

        return {"type": type(exc).__name__, "message": message, "missing_variable": missing_variable(exc)}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
