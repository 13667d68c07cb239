"""Attack: UDP leaves the sandbox (Landlock's network rules cover TCP only). In each call it sends datagrams to
127.0.0.1:PORT (set by the test, where it listens) and to the ports around it. Its positional encoding is honest.

Expected: nothing arrives.
"""

import socket

import _honest

from conformance import Conventions

PORT = 9


def strike():
    for port in range(max(1, PORT - 2), min(65535, PORT + 3)):
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as client:
                client.sendto(b"EXFILTRATED BY THE SUBMISSION", ("127.0.0.1", port))
        except OSError:
            pass


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        strike()
        return _honest.positional_encoding(n, d_model)


adapter = Adapter()
