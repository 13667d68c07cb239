"""Attack: make the grader allocate what the worker announces. In a call it finds the worker's response channel
(today: the ``channel`` of a frame above it, wire.Channel with its ``write_fd``; else every pipe among its open
descriptors) and writes a message header announcing one array of 2 GiB (today's wire: u64 header length, a JSON
header ``["a", 0, "|u1", [2**31 - 64]]``), sends a few bytes of it, waits, then crashes.

Expected: the grader's memory (its peak RSS) stays far below the announced size; the report is written.
"""

import json
import os
import stat
import struct
import sys
import time

from conformance import Conventions

ANNOUNCED = 2**31 - 64


def response_fds() -> list[int]:
    frame = sys._getframe(1)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            for candidate in (value, getattr(value, "channel", None)):
                fd = getattr(candidate, "write_fd", None)
                if isinstance(fd, int):
                    return [fd]
        frame = frame.f_back
    fds = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if stat.S_ISFIFO(os.fstat(int(name)).st_mode) and os.get_blocking(int(name)) is not None:
                fds.append(int(name))
        except (OSError, ValueError):
            pass
    return fds


def strike():
    header = json.dumps(["a", 0, "|u1", [ANNOUNCED]], separators=(",", ":")).encode()
    message = struct.pack("<Q", len(header)) + header + b"\0" * 4096
    for fd in response_fds():
        try:
            os.write(fd, message)
        except OSError:
            pass
    time.sleep(4)
    os._exit(5)


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        strike()


adapter = Adapter()
