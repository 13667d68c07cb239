"""Reproducible installs: the lock holds every version a fresh install takes, inside the package's own ranges;
every install of ``.ci/run`` reads it; the lower-bound file pins the package's own lowest versions.

The lock is rewritten by ``tools/lock_requirements.py``; the lower bounds are certified by ``.ci/run`` in an
environment of their own (``requirements-lowest.txt``).
"""

import re
import shlex
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
SELF = canonicalize_name(PROJECT["name"])
# The one dependency not tested at its lower bound: the only torch wheels this project's machines carry are 2.13.0
# and 2.14.1; any older release is a download of several GB (a CUDA build) from the package index.
NOT_AT_LOWER_BOUND = {"torch": "2.13.0"}


def pins(path: Path) -> dict[str, Version]:
    """{name: version} of the ``name==version`` lines of a requirements or constraints file."""
    found = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            requirement = Requirement(line)
            (specifier,) = requirement.specifier
            assert specifier.operator == "==", f"{path.name}: {line!r} is not a pin"
            found[canonicalize_name(requirement.name)] = Version(specifier.version)
    return found


def declared() -> list[Requirement]:
    """The package's requirements: its dependencies and every extra's (not the extras that name the package)."""
    lines = PROJECT["dependencies"] + [line for extra in PROJECT["optional-dependencies"].values() for line in extra]
    return [req for line in lines if canonicalize_name((req := Requirement(line)).name) != SELF]


def test_the_lock_pins_every_declared_requirement_inside_its_range():
    lock = pins(ROOT / "requirements-lock.txt")
    for requirement in declared():
        name = canonicalize_name(requirement.name)
        assert name in lock, f"{name} is required but not locked: run python tools/lock_requirements.py"
        assert requirement.specifier.contains(lock[name], prereleases=True), (
            f"the lock's {name}=={lock[name]} is outside the declared {requirement}: refresh the lock")


def test_the_lock_agrees_with_the_pinned_files():
    lock = pins(ROOT / "requirements-lock.txt")
    for name in ("requirements-dev.txt", "requirements-sockeye.txt", "requirements-keras-hub.txt"):
        for package, version in pins(ROOT / name).items():
            assert lock.get(package) == version, f"{name} pins {package}=={version}, the lock {lock.get(package)}"


def pip_installs(script: str) -> list[list[str]]:
    """The arguments of every ``pip install`` of a shell script (continuation lines joined)."""
    script = script.replace("\\\n", " ")
    return [shlex.split(line.split("pip install", 1)[1], comments=True) for line in script.splitlines()
            if re.match(r"\s*(python -m )?pip install", line)]


def test_every_install_reads_the_lock():
    assert "-c requirements-lock.txt" in (ROOT / "requirements-dev.txt").read_text().splitlines()
    installs = pip_installs((ROOT / ".ci" / "run").read_text())
    assert len(installs) >= 7, installs
    for args in installs:
        reads_the_lock = "-c" in args and args[args.index("-c") + 1] in ("requirements-lock.txt",
                                                                        "requirements-lowest.txt")
        assert reads_the_lock or args[-2:] in (["-r", "requirements-dev.txt"], ["--upgrade", "pip"]), (
            f".ci/run installs without the lock: pip install {' '.join(args)}")


def test_the_lower_bound_file_pins_the_package_at_its_declared_lowest():
    lowest = pins(ROOT / "requirements-lowest.txt")
    package = PROJECT["dependencies"] + PROJECT["optional-dependencies"]["torch"]
    for requirement in map(Requirement, package):
        name = canonicalize_name(requirement.name)
        (bound,) = [spec for spec in requirement.specifier if spec.operator == ">="]
        expected = Version(NOT_AT_LOWER_BOUND.get(name, bound.version))
        assert lowest.get(name) == expected, f"requirements-lowest.txt: {name} {lowest.get(name)}, expected {expected}"


def test_the_pin_reader_refuses_a_range(tmp_path):
    path = tmp_path / "r.txt"
    path.write_text("numpy>=1.24\n")
    with pytest.raises(AssertionError, match="not a pin"):
        pins(path)
