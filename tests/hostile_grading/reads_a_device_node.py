"""Attack: a device node shipped in the submission. The test makes ``random`` beside it, a character device
(1, 9: /dev/urandom's numbers), as a tar or zip unpacked by root could; in a call it opens it and reads. It raises
with what it read ("READ DEVICE BYTES ...") or with why it could not ("could not read the device: ...").

Expected: the read fails: no device bytes in anything the grade writes or prints, the message says it could not.
"""

from pathlib import Path

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        try:
            with open(Path(__file__).with_name("random"), "rb") as device:
                got = device.read(16)
        except OSError as exc:
            raise RuntimeError(f"could not read the device: {exc}") from None
        raise RuntimeError(f"READ DEVICE BYTES {got.hex()}")


adapter = Adapter()
