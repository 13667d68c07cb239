"""Attack: start a daemon (double fork, new session) that outlives the call, and an orphaned ``sleep``.

The PE itself is honest. Expected: the PE checks pass as an honest PE's do, and once the run ends no
process the adapter started is left (``MARKER`` in a command line).
"""

import os
import subprocess
import time

import _honest

from conformance import Conventions

MARKER = "313.1415"  # sleep's argument: how the test finds leftovers


def daemonize():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execvp("sleep", ["sleep", MARKER])
        os._exit(0)


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")
    started = False

    def positional_encoding(self, n, d_model):
        if not Adapter.started:
            Adapter.started = True
            daemonize()
            subprocess.Popen(["sleep", MARKER], start_new_session=True)
            time.sleep(0.2)
        return _honest.positional_encoding(n, d_model)


adapter = Adapter()
