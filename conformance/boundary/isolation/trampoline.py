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

import importlib
import importlib.machinery
import json
import os
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


def load(request_fd):  # (the supervisor module, the worker module, the namespaces entered, the total time limit)
    boot = read_boot(request_fd)
    sys.path[:] = boot["path"]
    package = Package(boot["modules"])
    sys.meta_path.insert(0, package)
    try:
        namespace = importlib.import_module(f"{PACKAGE}.sandbox").enter_pid_namespace()
        supervisor = importlib.import_module(f"{PACKAGE}.supervisor")
        worker = importlib.import_module(f"{PACKAGE}.worker")
    finally:
        sys.meta_path.remove(package)
        for name in [name for name in sys.modules if name == PACKAGE or name.startswith(PACKAGE + ".")]:
            del sys.modules[name]
    return supervisor, worker, namespace, boot["total_s"]


def start(request_fd, response_fd, control_fd, status_fd):
    null = os.open(os.devnull, os.O_RDONLY)  # standard input was this program: at its end now
    os.dup2(null, 0)
    os.close(null)
    supervisor, worker, namespace, total_s = load(request_fd)
    sys.exit(supervisor.main(worker.serve, request_fd, response_fd, control_fd, status_fd, total_s, namespace))
