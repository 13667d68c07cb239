"""Attack: forge the sandbox's record. At import it makes three reads the sandbox refuses (the instructor's
solution beside the class, a classmate's adapter, a secret of the course), then rewrites what the worker tells the
grader: today the hello and the answers carry the Landlock ABI and the refused reads, so it wraps the ``send`` of the
worker's channel (found in a frame above it) to say "landlock 3, refused: []", and empties the worker's count.
Its positional encoding is honest.

Expected: the report does not present the forged values as the grader's own: what the grader establishes itself
(``isolation.walls``) holds the kernel's Landlock ABI, never the forged 3; the worker's word is at most a claim.
"""

import sys
from pathlib import Path

import _honest

from conformance import Conventions

FORGED_ABI = 3


def refused_reads():
    here = Path(__file__).resolve().parent
    for path in (here.parents[1] / "reference.py", here.parent / "bob" / "adapter.py",
                 here.parents[1] / "secret.txt"):
        try:
            path.read_bytes()
        except OSError:
            pass


def forge():
    frame = sys._getframe(1)
    while frame is not None:
        scope = frame.f_locals
        channel, refused = scope.get("channel"), scope.get("refused")
        if refused is not None and hasattr(refused, "found"):
            refused.found.clear()
            refused.total = refused.reported = 0
        if channel is not None and hasattr(channel, "send"):
            original = channel.send

            def send(value, *args, original=original, **kwargs):
                if isinstance(value, dict):
                    value.pop("refused", None)
                    value.pop("refused_total", None)
                    hello = value.get("hello")
                    if isinstance(hello, dict):
                        hello.update(landlock=FORGED_ABI, refused=[], refused_total=0)
                return original(value, *args, **kwargs)

            channel.send = send
            return
        frame = frame.f_back


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        return _honest.positional_encoding(n, d_model)


refused_reads()
forge()
adapter = Adapter()
