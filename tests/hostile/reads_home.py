"""Attack: read the grader's home folder: SSH keys, tokens, whatever lies there, and print it, so that it
lands in the report's record of the submission's output (which a student may be shown).

The home is the one named by INSTRUCTOR_HOME when the grader passes it (``--pass-env``: how the tests name
a home of their own), else the user's from the password file. Its positional encoding is honest.

Expected: under grade nothing outside its own folder, Python and its temporary folder can be read: neither
the password file nor the home; nothing of the home reaches its output or the report, which names the reads
that were refused. The PE checks pass as an honest PE's do.
"""

import os
import pwd

import _honest

from conformance import Conventions

SECRETS = (".ssh/id_ed25519", ".ssh/id_rsa", ".netrc", ".config/gh/hosts.yml", "token.txt")


def home() -> str | None:
    if os.environ.get("INSTRUCTOR_HOME"):
        return os.environ["INSTRUCTOR_HOME"]
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except (KeyError, OSError):
        return None


def stolen() -> list[str]:
    found, root = [], home()
    for name in SECRETS if root else ():
        try:
            with open(os.path.join(root, name)) as file:
                found.append(f"{name}: {file.read()}")
        except OSError:
            continue
    return found


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        for secret in stolen():
            print("STOLEN", secret, flush=True)
        return _honest.positional_encoding(n, d_model)


adapter = Adapter()
