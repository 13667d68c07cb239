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
    """The arguments of every ``pip install`` of a shell script (continuation lines joined), however pip is called."""
    script = script.replace("\\\n", " ")
    return [shlex.split(match.group(1), comments=True) for line in script.splitlines()
            if (match := re.search(r"\bpip3?(?:\.exe)?\s+install\b(.*)", line))]


def named_packages(args: list[str]) -> list[str]:
    """The requirements an install names on its command line (not the files, editables and options)."""
    named, skip = [], False
    for arg in args:
        if skip or arg in ("-c", "-r", "-e", "--constraint", "--requirement", "--editable"):
            skip = not skip
            continue
        if not arg.startswith("-"):
            named.append(arg)
    return named


def test_every_install_reads_a_constraints_file_and_names_only_locked_packages():
    assert "-c requirements-lock.txt" in (ROOT / "requirements-dev.txt").read_text().splitlines()
    lock = pins(ROOT / "requirements-lock.txt")
    installs = pip_installs((ROOT / ".ci" / "run").read_text())
    assert len(installs) >= 9, installs
    for args in installs:
        assert "-c" in args or args[-2:] == ["-r", "requirements-dev.txt"], (
            f".ci/run installs without the lock: pip install {' '.join(args)}")
        for named in named_packages(args):
            assert canonicalize_name(Requirement(named).name) in lock, f".ci/run installs {named}, which is not locked"


def test_the_install_reader_sees_every_spelling_of_pip():
    script = "python3 -m pip install -q -e '.[jax]'\npip3 install flax\n  x && pip install \\\n  -c lock optax  # why\n"
    assert pip_installs(script) == [["-q", "-e", ".[jax]"], ["flax"], ["-c", "lock", "optax"]]
    assert named_packages(["-q", "-c", "lock", "--upgrade", "pip", "-e", ".[x]", "-r", "r.txt"]) == ["pip"]


def lock_tool():
    import importlib.util

    spec = importlib.util.spec_from_file_location("lock_requirements", ROOT / "tools" / "lock_requirements.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_lock_tool_installs_what_ci_installs_in_its_order():
    installs = [[arg for arg in args if arg != "-q"] for args in pip_installs((ROOT / ".ci" / "run").read_text())]
    later = [args[2:] for args in installs if args[:2] == ["-c", "requirements-lock.txt"] and "pip" not in args]
    assert later == [list(args) for args in lock_tool().LATER_INSTALLS]


def test_the_lock_names_everything_the_installed_requirements_need():
    """The dependency closure of what the project requires, as installed here (its extras where installed), is
    locked: a transitive dependency missing from the lock would float."""
    from importlib.metadata import PackageNotFoundError, distribution

    lock, missing, seen = pins(ROOT / "requirements-lock.txt"), [], set()
    stack = [Requirement(f"{PROJECT['name']}[{','.join(PROJECT['optional-dependencies'])}]")]
    while stack:
        requirement = stack.pop()
        name = canonicalize_name(requirement.name)
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue  # an extra not installed here
        if (name, tuple(sorted(requirement.extras))) in seen:
            continue
        seen.add((name, tuple(sorted(requirement.extras))))
        if name != SELF and name not in lock:
            missing.append(name)
        for line in dist.requires or []:
            needed = Requirement(line)
            if needed.marker is None or any(needed.marker.evaluate({"extra": extra})
                                            for extra in {"", *requirement.extras}):
                stack.append(needed)
    assert not missing, f"installed as requirements but not locked: {sorted(set(missing))}"
    assert {"pluggy", "iniconfig", "setuptools"} <= {name for name, _ in seen}


def test_the_build_backend_is_the_lock_s_setuptools():
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    assert build == [f"setuptools=={pins(ROOT / 'requirements-lock.txt')['setuptools']}"]


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
