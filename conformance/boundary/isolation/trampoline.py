# The first code of an isolated worker. ``supervisor.Worker`` starts ``python -I -B -u -`` and writes this file to
# its standard input, followed by a line ``start(REQUEST, RESPONSE, CONTROL, STATUS)`` naming its pipes; so the
# process's command line, arguments and environment name nothing of the suite. Comments, not a docstring:
# this module is the program's ``__main__``, whose ``__doc__`` a submission could read.
#
# ``start`` reads the boot message from REQUEST (8 bytes of length, then JSON: the import path, the total time
# limit, the sources of the worker's modules), loads those modules as the package ``app`` from memory (compiled
# without docstrings, named app/NAME.py), and removes the package from ``sys.modules`` before any of the
# candidate's code runs: the candidate finds none of the suite's modules there, and no frame above its calls
# names a file of the suite. The PID namespace is entered here, between loading ``sandbox`` (the standard
# library only) and the others (NumPy, which may start threads): a process with threads cannot enter a new
# user namespace. Then ``supervisor.main`` forks: this process supervises, the child is the worker.
#
# ``warm`` (warm.py) is the other last line: this process imports NumPy and torch, then forks one child per
# request on its socket; each child takes the pipes and the output file sent with the request, its own session,
# working directory, environment and random state, and runs ``start`` like a cold worker. A forked child has one
# thread, whatever the libraries imported here started, so it can still enter a new user namespace.

import importlib
import importlib.machinery
import json
import os
import select
import socket
import sys

PACKAGE = "app"


class Package:
    def __init__(self, sources):
        self.sources = sources

    def find_spec(self, name, path=None, target=None):
        head, _, tail = name.rpartition(".")
        if name == PACKAGE:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        if head == PACKAGE and tail in self.sources:
            return importlib.machinery.ModuleSpec(name, self)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        tail = module.__name__.rpartition(".")[2]
        source = "" if module.__name__ == PACKAGE else self.sources[tail]
        exec(compile(source, f"{PACKAGE}/{tail}.py", "exec", optimize=2), module.__dict__)


def read_exactly(fd, size):  # what follows on the pipe is the worker's, not this message's
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            raise SystemExit(f"the boot message ended after {len(data)} of {size} bytes")
        data += chunk
    return data


def read_boot(fd):
    return json.loads(read_exactly(fd, int.from_bytes(read_exactly(fd, 8), "little")))


def load(request_fd):  # (the supervisor module, the worker module, the namespaces entered, the boot message)
    boot = read_boot(request_fd)
    sys.path[:] = boot["path"]
    package = Package(boot["modules"])
    sys.meta_path.insert(0, package)
    try:
        sandbox = importlib.import_module(f"{PACKAGE}.sandbox")
        namespace = sandbox.enter_pid_namespace() if boot.get("namespaces", True) else ""
        supervisor = importlib.import_module(f"{PACKAGE}.supervisor")
        worker = importlib.import_module(f"{PACKAGE}.worker")
    finally:
        sys.meta_path.remove(package)
        for name in [name for name in sys.modules if name == PACKAGE or name.startswith(PACKAGE + ".")]:
            del sys.modules[name]
    return supervisor, worker, namespace, boot


def start(request_fd, response_fd, control_fd, status_fd):
    null = os.open(os.devnull, os.O_RDONLY)  # standard input was this program: at its end now
    os.dup2(null, 0)
    os.close(null)
    supervisor, worker, namespace, boot = load(request_fd)
    sys.exit(supervisor.main(worker.serve, request_fd, response_fd, control_fd, status_fd, boot["total_s"], namespace,
                             boot.get("host_dir")))


def warm(sock_fd, preload, path):
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.path[:] = path
    for name in preload:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a package that cannot import here is imported by the worker, or not
            pass
    sys.path[:] = []
    server = socket.socket(fileno=sock_fd)
    while True:
        reap()
        if not select.select([server], [], [], 1.0)[0]:
            continue
        try:
            message, fds, _, _ = socket.recv_fds(server, 1 << 20, 8)
        except OSError:
            break
        if not message:  # the grader closed its end: no more workers
            break
        if len(fds) == 6:
            fork_worker(server, json.loads(message), fds)
        for fd in fds:
            os.close(fd)
    os._exit(0)


def fork_worker(server, request, fds):
    *pipes, log_fd, reply_fd = fds
    pid = os.fork()
    if pid:
        os.write(reply_fd, str(pid).encode())
        return
    code = 1
    try:
        server.close()
        os.close(reply_fd)
        join_cgroup(request.get("cgroup", ()))
        os.setsid()
        for target in (1, 2):
            os.dup2(log_fd, target)
        os.close(log_fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        fresh_state()
        start(*pipes)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        os._exit(code)


def join_cgroup(procs_files):  # the worker's control group, before anything of the worker runs
    for path in procs_files:
        try:
            with open(path, "w") as procs:
                procs.write(str(os.getpid()))
        except OSError:
            pass


def fresh_state():  # what a new interpreter would have drawn or read anew
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile.tempdir = None  # TMPDIR is this worker's
    random = sys.modules.get("numpy.random")
    if random is not None:
        random.seed()  # NumPy's global generator, from fresh entropy (Python's own reseeds at fork)


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
