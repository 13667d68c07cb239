"""Attack: the worker's own pipe and socket, written to from inside a part. Large buffers travel as memory
files over a socket beside the pipes; this adapter writes a forged answer that announces one and sends,
instead, a file on disk (layer_norm) or a memory file shorter than announced (positional_encoding).

Expected: those checks are errors ("malformed answer ... memory files"), never a crash or a hang of the
grader, nothing it was sent stays open in the grader; a fresh worker serves the next check (learning_rate,
honest, passes).
"""

import array
import json
import os
import socket
import struct
import sys

import _honest

from conformance import Conventions

# The worker is started as ``python -c BOOTSTRAP REQUEST RESPONSE CONTROL STATUS TOTAL SHARE``.
RESPONSE, SHARE = int(sys.argv[2]), int(sys.argv[6])


def forge(fd: int) -> None:
    header = json.dumps(["d", [["ok", ["a", 0, "|u1", [2**20]]]]]).encode()
    sock = socket.socket(fileno=os.dup(SHARE))
    sock.setblocking(True)
    sock.sendmsg([b"F"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
    os.set_blocking(RESPONSE, True)
    os.write(RESPONSE, struct.pack("<QQ", len(header), 2**20) + header)


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def layer_norm(self, x, gamma, beta, eps):
        forge(os.open(__file__, os.O_RDONLY))
        return _honest.layer_norm(x, gamma, beta, eps)

    def positional_encoding(self, n, d_model):
        short = os.memfd_create("forged")
        os.ftruncate(short, 16)
        forge(short)
        return _honest.positional_encoding(n, d_model)

    def learning_rate(self, step, d_model, warmup):
        return _honest.learning_rate(step, d_model, warmup)


adapter = Adapter()
