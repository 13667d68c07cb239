"""Attack: reach a daemon on a named Unix socket (on a CI runner: Docker's socket, root on the runner). Landlock
refuses TCP and abstract sockets, not socket files; /proc/net/unix lists every bound path. It connects to each
listed path whose name holds MARKER (the test's daemon: kept to it so the test never pokes the machine's real
daemons) and to any such socket it finds walking /tmp, and says hello. Its positional encoding is honest.

Expected: the test's daemon receives no connection.
"""

import os
import socket

import _honest

from conformance import Conventions

MARKER = "conformance-heldout"


def listed() -> list[str]:
    paths = []
    try:
        with open("/proc/net/unix") as table:
            for line in table.read().splitlines()[1:]:
                fields = line.split()
                if len(fields) >= 8 and MARKER in fields[7]:
                    paths.append(fields[7])
    except OSError:
        pass
    try:
        for root, dirs, files in os.walk("/tmp"):
            if root.count(os.sep) > 4:
                dirs[:] = []
            paths += [os.path.join(root, name) for name in files if MARKER in name]
    except OSError:
        pass
    return paths


def strike():
    for path in listed():
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                client.settimeout(2)
                client.connect(path)
                client.sendall(b"HELLO FROM THE SUBMISSION")
        except OSError:
            pass


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        strike()
        return _honest.positional_encoding(n, d_model)


adapter = Adapter()
