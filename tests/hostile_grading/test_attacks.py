"""Held-out hostile tests of the grader: each attack on it, graded as an
instructor grades (a subprocess ``python -m conformance grade ...``, a class folder with the solution beside it, a
secret in the grader's environment), with and without bubblewrap on the grader's PATH.

Only observable outcomes are asserted: what the grade prints, writes, scores and leaves on disk. Written against
the grader before its walls were rebuilt; collected only with RUN_HELDOUT_GRADING=1 (tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import csv
import ctypes
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.heldout_grading

HERE = Path(__file__).parent
HONEST_FORMULAS = HERE.parent / "hostile" / "_honest.py"
PE_ONLY = "pe_matches_published_values or pe_position_0 or layer_norm_matches_published_example"
PE = "pe_matches_published_values or pe_position_0"
GRADE_TIMEOUT = 300  # seconds: every grade here takes far less; a grade that takes longer is hung
SOLUTION = '''
import numpy as np

INSTRUCTOR_MARK = "{mark}"


def positional_encoding(n, d_model):  # the instructor's, correct
    angle = np.arange(n)[:, None] / 10000.0 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((n, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return pe
'''
# What the grader's environment keeps of the test's (the rest is the test's own business).
KEPT_VARIABLES = ("PYTHONPATH", "HOME", "LANG", "LC_ALL", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                  "MKL_NUM_THREADS", "CONFORMANCE_CACHE_DIR", "CONFORMANCE_CACHE", "VIRTUAL_ENV")


# -- the sandbox present or absent ------------------------------------------------------------------------------
@dataclass
class Sandbox:
    name: str
    path: str  # the grader's PATH


@pytest.fixture(params=["bubblewrap", "no-bubblewrap"])
def sandbox(request, tmp_path_factory) -> Sandbox:
    """bubblewrap: the grader finds bwrap on its PATH. no-bubblewrap: its PATH holds the interpreter and nothing
    else (the grader itself is started by absolute path)."""
    if request.param == "bubblewrap":
        if shutil.which("bwrap") is None:
            pytest.skip("bubblewrap (bwrap) is not installed here")
        return Sandbox("bubblewrap", os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"))
    bare = tmp_path_factory.mktemp("path-without-bwrap")
    for name in ("python", "python3", Path(sys.executable).name):
        with contextlib.suppress(FileExistsError):
            (bare / name).symlink_to(sys.executable)
    assert shutil.which("bwrap", path=str(bare)) is None
    return Sandbox("no-bubblewrap", str(bare))


# -- running the grader as a user does ----------------------------------------------------------------------------
@dataclass
class Done:
    code: int | None  # None: it did not end within the timeout (killed)
    out: bytes
    err: bytes
    seconds: float

    @property
    def text(self) -> str:
        return (self.out + self.err).decode(errors="replace")


def grader_env(sandbox: Sandbox, temp: Path, secret: str | None = None, **extra: str) -> dict[str, str]:
    env = {"GRADER_SECRET_TOKEN": secret} if secret else {}  # first: early in /proc/PID/environ
    env.update({name: os.environ[name] for name in KEPT_VARIABLES if name in os.environ})
    env.update(PATH=sandbox.path, TMPDIR=str(temp), PYTHONUNBUFFERED="1", **extra)
    return env


def start(args: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "conformance", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=cwd, start_new_session=True)


def finish(process: subprocess.Popen, timeout: float, began: float | None = None) -> Done:
    began = time.monotonic() if began is None else began
    try:
        out, err = process.communicate(timeout=timeout)
        return Done(process.returncode, out, err, time.monotonic() - began)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        return Done(None, out, err, time.monotonic() - began)


def run_grader(sandbox: Sandbox, args: list[str], temp: Path, *, timeout: float = GRADE_TIMEOUT,
               secret: str | None = None, cwd: Path | None = None, **extra: str) -> Done:
    """``python -m conformance ARGS`` with the grader's TMPDIR at ``temp``; whatever it left running is ended."""
    temp.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    try:
        return finish(start(args, grader_env(sandbox, temp, secret, **extra), cwd), timeout, began)
    finally:
        end_processes_using(temp)


def processes_using(temp: Path) -> list[int]:
    """The processes whose environment names ``temp`` (the grader's TMPDIR, hence its workers' folders)."""
    needle = re.compile(rb"=" + re.escape(str(temp).encode()) + rb"(\x00|/)")
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if needle.search((entry / "environ").read_bytes()):
                found.append(int(entry.name))
    return found


def end_processes_using(temp: Path) -> None:
    for pid in processes_using(temp):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def write_submission(folder: Path, source: str | Path, **constants) -> Path:
    """A submission folder: ``source`` as adapter.py (its module-level ``NAME = ...`` lines set from ``constants``)
    and the honest formulas beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    text = Path(source).read_text() if isinstance(source, Path) else source
    for name, value in constants.items():
        line = f"{name} = {value!r}"
        text, count = re.subn(rf"^{name} = .*$", lambda _, line=line: line, text, count=1, flags=re.M)
        assert count == 1, f"{source} sets no {name}"
    (folder / "adapter.py").write_text(text)
    shutil.copy(HONEST_FORMULAS, folder / "_honest.py")
    return folder


def attack(name: str) -> Path:
    return HERE / f"{name}.py"


def course(tmp_path: Path, students: dict[str, tuple[str, dict]], mark: str = "") -> Path:
    """course/reference.py (the instructor's solution, holding ``mark``), course/secret.txt, and course/class/NAME
    per student (attack file name, constants); the class folder."""
    root = tmp_path / "course"
    klass = root / "class"
    klass.mkdir(parents=True)
    (root / "reference.py").write_text(SOLUTION.format(mark=mark or "INSTRUCTOR-SOLUTION"))
    (root / "secret.txt").write_text("COURSE-SECRET " + (mark or "x"))
    for name, (source, constants) in students.items():
        write_submission(klass / name, attack(source), **constants)
    return klass


def files_under(*folders: Path) -> list[Path]:
    return [p for folder in folders if folder.exists() for p in sorted(folder.rglob("*")) if p.is_file()
            and not p.is_symlink()]


def report(path: Path) -> dict:
    return json.loads(path.read_text())


def summary_rows(out: Path) -> dict[str, dict]:
    with open(out / "summary.csv", newline="") as file:
        return {row["student"]: row for row in csv.DictReader(file)}


def checks(data: dict) -> dict[str, dict]:
    return {c["id"]: c for c in data.get("checks", [])}


def isolation_of(data: dict) -> dict:
    return data["implementations"][0]["isolation"]


# -- 1. the grader reads files for the student ------------------------------------------------------------------
@pytest.mark.parametrize("target", ["environment", "solution"])
def test_a_symlinked_output_file_leaks_no_secret(sandbox, tmp_path, target):
    """The output file replaced by a symlink to /proc/self/environ (the grader's environment, a token in it) or to
    the instructor's solution, then a crash: neither secret in any report, NAME.txt, the terminal, results.json."""
    token, mark = f"tok-{uuid.uuid4().hex}", f"SOLUTION-MARK-{uuid.uuid4().hex}"
    klass = course(tmp_path, {"a_mallory": ("symlinks_its_output", {"TARGET": target}),
                              "b_bob": ("honest", {})}, mark=mark)
    out = tmp_path / "grades"
    graded = run_grader(sandbox, ["grade", str(klass), "--out", str(out), "-k", PE_ONLY, "--seed", "7", "--jobs",
                                  "1"], tmp_path / "tmp-class", secret=token)
    single = tmp_path / "single"
    single.mkdir()
    alone = run_grader(sandbox, ["grade", str(klass / "a_mallory"), "-k", PE_ONLY, "--seed", "7",
                                 "--json", str(single / "mallory.json"), "--gradescope", str(single / "results.json")],
                       tmp_path / "tmp-single", secret=token)
    assert graded.code is not None and alone.code is not None, "a grade hung"
    assert (out / "a_mallory.json").exists() and (out / "summary.csv").exists(), graded.text[-3000:]
    assert (single / "mallory.json").exists() and (single / "results.json").exists(), alone.text[-3000:]
    leaked = {secret: [str(p) for p in files_under(out, single) if secret.encode() in p.read_bytes()]
              + [what for what, done in (("class output", graded), ("single output", alone))
                 if secret.encode() in done.out + done.err]
              for secret in (token, mark)}
    assert leaked == {token: [], mark: []}, leaked


def test_a_fifo_in_place_of_the_output_file_does_not_hang_the_grade(sandbox, tmp_path):
    """Two calls crash after the swap (an honest grade of these checks takes seconds): the grade ends within 45 s,
    writes its report, and names the exits, not a hang (each call's limit is 60 s by default)."""
    klass = course(tmp_path, {"a_mallory": ("fifo_for_output", {})})
    report_path = tmp_path / "mallory.json"
    done = run_grader(sandbox, ["grade", str(klass / "a_mallory"), "-k", PE_ONLY, "--seed", "7", "--json",
                                str(report_path)], tmp_path / "tmp", timeout=180)
    assert done.code is not None, f"the grade hung ({done.seconds:.0f} s): {done.text[-2000:]}"
    assert report_path.exists() and "grade" in report(report_path), done.text[-2000:]
    hung = {c["id"]: c["message"][:200] for c in report(report_path)["checks"] if "hung" in (c.get("message") or "")}
    assert done.seconds < 45 and not hung, f"the grade took {done.seconds:.0f} s; reported hung: {hung}"


# -- 2. chmod and utime ---------------------------------------------------------------------------------------------
def modes_and_times(root: Path) -> dict[str, tuple[int, int]]:
    found = {}
    for folder, _, files in os.walk(root):
        for path in [Path(folder), *(Path(folder) / name for name in files)]:
            st = path.lstat()
            found[str(path)] = (stat.S_IMODE(st.st_mode), st.st_mtime_ns)
    return found


def test_chmod_and_utime_of_the_class_change_nothing_and_zero_no_classmate(sandbox, tmp_path):
    students = {"b_bob": ("honest", {}), "c_carol": ("honest", {})}
    control = course(tmp_path / "control", students)
    base = run_grader(sandbox, ["grade", str(control), "--out", str(tmp_path / "control-grades"), "-k", PE_ONLY,
                                "--seed", "7", "--jobs", "1"], tmp_path / "tmp-control")
    expected = {name: (row["score"], row["max_score"]) for name, row in
                summary_rows(tmp_path / "control-grades").items()}
    assert base.code is not None and set(expected) == {"b_bob", "c_carol"}, base.text[-2000:]

    klass = course(tmp_path / "attacked", {"a_mallory": ("chmods_the_class", {"CLASSMATES": ["b_bob", "c_carol"]}),
                                           **students})
    root = klass.parent
    time.sleep(0.05)
    before = modes_and_times(root)
    out = tmp_path / "grades"
    try:
        done = run_grader(sandbox, ["grade", str(klass), "--out", str(out), "-k", PE_ONLY, "--seed", "7",
                                    "--jobs", "1"], tmp_path / "tmp")
        after = {path: (stat.S_IMODE(os.lstat(path).st_mode), os.lstat(path).st_mtime_ns) for path in before}
    finally:  # let the test's own clean-up in
        for path in before:
            with contextlib.suppress(OSError):
                os.chmod(path, 0o755 if os.path.isdir(path) else 0o644)
    changed = {path: (before[path], after[path]) for path in before if before[path] != after[path]}
    assert not changed, f"modes or times changed in the course: {changed}"
    rows = summary_rows(out)
    got = {name: (rows[name]["score"], rows[name]["max_score"]) for name in expected if name in rows}
    assert got == expected, done.text[-3000:]


# -- 3 and 7. one character; terminal injection -----------------------------------------------------------------
MESSAGES = {
    "surrogate": "lone \ud800 surrogate",
    "escapes": "\x1b[2J\x1b[H\rscore: 101 / 101\r\n\x1b]52;c;aGFja2VkIGNsaXBib2FyZA==\x07done",
}
BAD_BYTES = (b"\x1b", b"\x07", b"\xed\xa0\x80")  # ESC, BEL, a lone surrogate encoded (surrogatepass)


def unsafe(data: bytes) -> list[str]:
    """What in ``data`` (a file or a stream) could turn a terminal or a reader: raw escape, bell, lone surrogate,
    invalid UTF-8, a fake score line at the start of a line."""
    found = [repr(bad) for bad in BAD_BYTES if bad in data]
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        found.append(f"not UTF-8: {exc}")
    if re.search(rb"(^|[\r\n])[ \t]*score: 101 / 101", data):
        found.append("a fake score line")
    return found


def strings_of(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*strings_of(k), *strings_of(v))]
    if isinstance(value, list):
        return [s for v in value for s in strings_of(v)]
    return []


def json_unsafe(path: Path) -> list[str]:
    """A JSON report must be valid UTF-8 and hold no lone surrogate, even escaped (a consumer cannot encode it)."""
    found = [f"{path.name}: {why}" for why in unsafe(path.read_bytes()) if why != "a fake score line"]
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, ValueError) as exc:
        return [*found, f"{path.name}: not JSON: {exc}"]
    for text in strings_of(data):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            found.append(f"{path.name}: a lone surrogate in {text[:80]!r}")
            break
    return found


@pytest.mark.parametrize("kind", list(MESSAGES))
def test_a_hostile_string_in_a_class_neither_stops_it_nor_reaches_the_terminal(sandbox, tmp_path, kind):
    klass = course(tmp_path, {"a_mallory": ("hostile_strings", {"MESSAGE": MESSAGES[kind]}),
                              "b_bob": ("honest", {})})
    out = tmp_path / "grades"
    done = run_grader(sandbox, ["grade", str(klass), "--out", str(out), "-k", PE_ONLY, "--seed", "7", "--jobs",
                                "1"], tmp_path / "tmp")
    assert done.code is not None, "the class grade hung"
    problems = []
    for name in ("summary.csv", "summary.md", "a_mallory.json", "a_mallory.txt", "b_bob.json", "b_bob.txt"):
        if not (out / name).exists():
            problems.append(f"no {name}")
    if (out / "b_bob.json").exists() and "grade" not in report(out / "b_bob.json"):
        problems.append("b_bob not graded")
    for path in files_under(out):
        problems += json_unsafe(path) if path.suffix == ".json" else [f"{path.name}: {why}"
                                                                      for why in unsafe(path.read_bytes())]
    problems += [f"stdout: {why}" for why in unsafe(done.out)] + [f"stderr: {why}" for why in unsafe(done.err)]
    assert not problems, (problems, done.text[-3000:])


@pytest.mark.parametrize("kind", list(MESSAGES))
def test_a_hostile_string_in_a_single_grade_neither_stops_it_nor_reaches_the_terminal(sandbox, tmp_path, kind):
    klass = course(tmp_path, {"a_mallory": ("hostile_strings", {"MESSAGE": MESSAGES[kind]})})
    out = tmp_path / "out"
    out.mkdir()
    done = run_grader(sandbox, ["grade", str(klass / "a_mallory"), "-k", PE_ONLY, "--seed", "7", "--json",
                                str(out / "mallory.json"), "--gradescope", str(out / "results.json")], tmp_path / "tmp")
    assert done.code is not None, "the grade hung"
    problems = [f"no {name}" for name in ("mallory.json", "results.json") if not (out / name).exists()]
    problems += [f"stdout: {why}" for why in unsafe(done.out)] + [f"stderr: {why}" for why in unsafe(done.err)]
    if (out / "mallory.json").exists():
        html = out / "mallory.html"
        rendered = run_grader(sandbox, ["report", str(out / "mallory.json"), "--html", str(html)], tmp_path / "tmp2")
        if not html.exists() or html.stat().st_size == 0:
            problems.append(f"report --html wrote no HTML (exit {rendered.code}): {rendered.text[-500:]}")
        else:
            problems += [f"mallory.html: {why}" for why in unsafe(html.read_bytes()) if why != "a fake score line"]
    for path in files_under(out):
        if path.suffix == ".json":
            problems += json_unsafe(path)
    assert not problems, (problems, done.text[-3000:])


# -- 4. sockets --------------------------------------------------------------------------------------------------
def test_a_named_unix_socket_is_out_of_reach(sandbox, tmp_path):
    folder = Path(tempfile.mkdtemp(prefix="hg-"))  # short: a socket's path has 108 bytes at most
    path = folder / f"conformance-heldout-{uuid.uuid4().hex[:8]}.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(16)
    server.settimeout(0.2)
    connections, stop = [], threading.Event()

    def accept():
        while not stop.is_set():
            try:
                client, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            with client:
                client.settimeout(1)
                with contextlib.suppress(OSError):
                    connections.append(client.recv(100))

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        klass = course(tmp_path, {"a_mallory": ("reaches_unix_sockets", {})})
        report_path = tmp_path / "mallory.json"
        done = run_grader(sandbox, ["grade", str(klass / "a_mallory"), "-k", PE, "--seed", "7", "--json",
                                    str(report_path)], tmp_path / "tmp")
    finally:
        time.sleep(0.5)
        stop.set()
        thread.join(5)
        server.close()
        shutil.rmtree(folder, ignore_errors=True)
    assert done.code is not None and report_path.exists(), done.text[-2000:]
    assert connections == [], f"the daemon on {path} was reached: {connections}"


def test_udp_does_not_leave_the_sandbox(sandbox, tmp_path):
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    try:
        klass = course(tmp_path, {"a_mallory": ("sends_udp", {"PORT": port})})
        report_path = tmp_path / "mallory.json"
        done = run_grader(sandbox, ["grade", str(klass / "a_mallory"), "-k", PE, "--seed", "7", "--json",
                                    str(report_path)], tmp_path / "tmp")
        listener.settimeout(0.5)
        received = []
        with contextlib.suppress(TimeoutError, OSError):
            while True:
                received.append(listener.recvfrom(100))
    finally:
        listener.close()
    assert done.code is not None and report_path.exists(), done.text[-2000:]
    assert received == [], f"datagrams arrived on 127.0.0.1:{port}: {received[:3]}"


# -- 5. resources ------------------------------------------------------------------------------------------------
def numbers_about_memory(value, key: str = "") -> list[float]:
    """Every number of an isolation record (its limits left out) under a key about memory (rss, memory, mib)."""
    if isinstance(value, dict):
        return [n for k, v in value.items() if k != "limits" for n in numbers_about_memory(v, k)]
    if isinstance(value, list):
        return [n for v in value for n in numbers_about_memory(v, key)]
    if isinstance(value, (int, float)) and not isinstance(value, bool) and re.search(r"rss|memory|mib", key):
        return [float(value)]
    return []


LIMIT_MIB, HELD_MIB = 2048, 2560  # the worker imports torch: its address space alone takes most of 1 GiB


@pytest.mark.parametrize("where", ["memfd", "shm"])
def test_memory_held_outside_the_address_space_does_not_go_unnoticed(sandbox, tmp_path, where):
    """2.5 GiB held in memfd or /dev/shm under --worker-memory 2048: the worker is stopped (a message naming
    memory, or its own "could not hold"), or a memory figure of the report counts what it held."""
    klass = course(tmp_path, {"a_mallory": ("holds_shared_memory", {"WHERE": where, "HELD_MIB": HELD_MIB})})
    report_path = tmp_path / "mallory.json"
    done = run_grader(sandbox, ["grade", str(klass / "a_mallory"), "-k", PE, "--seed", "7", "--json",
                                str(report_path), "--worker-memory", str(LIMIT_MIB)], tmp_path / "tmp")
    assert done.code is not None and report_path.exists(), done.text[-2000:]
    data = report(report_path)
    messages = " ".join(c.get("message") or "" for c in data["checks"]).lower()
    stopped = "memory" in messages or "could not hold" in messages
    counted = [n for n in numbers_about_memory(isolation_of(data)) if n >= 0.9 * HELD_MIB]
    assert stopped or counted, (f"{HELD_MIB} MiB held under a {LIMIT_MIB} MiB limit went unnoticed: checks "
                                f"{ {c['id']: c['status'] for c in data['checks']} }, memory figures "
                                f"{numbers_about_memory(isolation_of(data))}")


def folder_bytes(folder: Path) -> int:
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


def test_the_temporary_folder_has_a_quota(sandbox, tmp_path):
    """1 GiB written into the worker's temporary folder: the writing fails well before (or the grade reports
    it), and what reaches the disk under the grader's TMPDIR stays under 600 MiB."""
    klass = course(tmp_path, {"a_mallory": ("fills_the_disk", {"TARGET_MIB": 1024})})
    report_path, temp = tmp_path / "mallory.json", tmp_path / "tmp"
    temp.mkdir()
    peak, stop = [0], threading.Event()

    def watch():
        while not stop.is_set():
            peak[0] = max(peak[0], folder_bytes(temp))
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        done = run_grader(sandbox, ["grade", str(klass / "a_mallory"), "-k", PE, "--seed", "7", "--json",
                                    str(report_path)], temp)
    finally:
        stop.set()
        watcher.join(10)
    assert done.code is not None and report_path.exists(), done.text[-2000:]
    text = report_path.read_text() + done.text
    reported = re.search(r"quota|temporary folder .*(full|size)|disk", text, re.I)
    assert peak[0] < 600 * 2**20 or reported, f"{peak[0] / 2**20:.0f} MiB reached the disk, unreported"
    assert "WROTE 1024 MiB" not in text or reported, "1 GiB written into the temporary folder, unreported"


def test_an_announced_huge_message_is_not_allocated_by_the_grader(sandbox, tmp_path):
    """The worker announces a 2 GiB array on its response channel: the grader's peak RSS (the grade run as the
    only child of a helper process, read by getrusage(RUSAGE_CHILDREN)) stays far below it."""
    klass = course(tmp_path, {"a_mallory": ("announces_a_huge_message", {})})
    report_path, temp = tmp_path / "mallory.json", tmp_path / "tmp"
    temp.mkdir()
    helper = ("import resource, subprocess, sys\n"
              "done = subprocess.run(sys.argv[1:])\n"
              "print('MAXRSS_KIB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, done.returncode)\n")
    command = [sys.executable, "-c", helper, sys.executable, "-m", "conformance", "grade", str(klass / "a_mallory"),
               "-k", "pe_matches_published_values", "--seed", "7", "--json", str(report_path), "--timeout", "10"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=grader_env(sandbox, temp), start_new_session=True)
    try:
        done = finish(process, GRADE_TIMEOUT)
    finally:
        end_processes_using(temp)
    assert done.code is not None, "the grade hung"
    found = re.search(rb"MAXRSS_KIB (\d+)", done.out)
    assert found, done.text[-2000:]
    peak_mib = int(found.group(1)) / 1024
    assert report_path.exists(), done.text[-2000:]
    assert peak_mib < 1024, f"the grader's peak RSS was {peak_mib:.0f} MiB after a 2 GiB announcement"


# -- 6. records the worker can forge; a device node ------------------------------------------------------------
def kernel_landlock_abi() -> int:
    """The kernel's Landlock ABI: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(0, abi)


def test_a_forged_sandbox_record_is_not_presented_as_the_graders(sandbox, tmp_path):
    klass = course(tmp_path, {"a_mallory": ("forges_its_record", {}), "bob": ("honest", {})})
    report_path = tmp_path / "mallory.json"
    done = run_grader(sandbox, ["grade", str(klass / "a_mallory"), "-k", PE, "--seed", "7", "--json",
                                str(report_path)], tmp_path / "tmp")
    assert done.code is not None and report_path.exists(), done.text[-2000:]
    isolation = isolation_of(report(report_path))
    walls = isolation.get("walls")
    assert isinstance(walls, dict), f"no isolation.walls: the record is {sorted(isolation)}"
    assert walls.get("landlock_abi") == kernel_landlock_abi(), walls
    for key, kind in (("bubblewrap", bool), ("landlock_abi", int), ("pid_namespace", bool), ("network", str),
                      ("memory_cgroup", bool), ("pids_cgroup", bool)):
        assert type(walls.get(key)) is kind, f"walls.{key}: {walls.get(key)!r}"
    if sandbox.name == "no-bubblewrap":
        assert walls["bubblewrap"] is False, walls
    outside_claims = {k: v for k, v in isolation.items() if k != "worker_claims"}
    assert outside_claims.get("landlock_abi") in (None, walls["landlock_abi"]), \
        f"the worker's forged ABI is the report's: {outside_claims.get('landlock_abi')}"


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_device_node_in_the_submission_cannot_be_read(sandbox, tmp_path):
    klass = course(tmp_path, {"a_mallory": ("reads_a_device_node", {})})
    os.mknod(klass / "a_mallory" / "random", stat.S_IFCHR | 0o666, os.makedev(1, 9))
    report_path = tmp_path / "mallory.json"
    done = run_grader(sandbox, ["grade", str(klass / "a_mallory"), "-k", PE, "--seed", "7", "--json",
                                str(report_path)], tmp_path / "tmp")
    assert done.code is not None and report_path.exists(), done.text[-2000:]
    text = report_path.read_text() + done.text
    assert "READ DEVICE BYTES" not in text, "the submission read its device node"
    messages = " ".join(c.get("message") or "" for c in report(report_path)["checks"])
    assert "could not read" in messages or "device" in messages.lower(), messages[:2000]


# -- 8. points for a look-up ------------------------------------------------------------------------------------
LOOK_UP_CHECKS = ("lrate_matches or layer_norm_matches or published_layer_norm_example"
                  " or published_learning_rates")


def test_a_look_up_of_the_published_numbers_earns_nothing_and_is_named(sandbox, tmp_path):
    klass = course(tmp_path, {"a_looks_up": ("looks_up_published", {"LOOK_UP": True}),
                              "b_same_code": ("looks_up_published", {"LOOK_UP": False})})
    out = tmp_path / "grades"
    done = run_grader(sandbox, ["grade", str(klass), "--out", str(out), "-k", LOOK_UP_CHECKS, "--seed", "7",
                                "--jobs", "1", "--no-training"], tmp_path / "tmp")
    assert done.code is not None and (out / "summary.csv").exists(), done.text[-3000:]
    rows = summary_rows(out)
    looks_up, same = float(rows["a_looks_up"]["score"]), float(rows["b_same_code"]["score"])
    assert looks_up <= same, f"the look-up scored {looks_up}, the same code without it {same}"
    assert rows["a_looks_up"]["hard_coded"].strip(), "the summary's hard_coded column does not name the look-up"


# -- 9. interrupts, reruns, kills --------------------------------------------------------------------------------
INTERRUPT_CLASS = {"a_fast": ("honest", {}), "b_slow": ("slow_student", {"SLEEP_S": 10}), "c_late": ("honest", {})}


def wait_for(condition, timeout: float, step: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return condition()


def class_args(klass: Path, out: Path, seed: str = "7", *extra: str) -> list[str]:
    return ["grade", str(klass), "--out", str(out), "-k", PE, "--seed", seed, "--jobs", "1", "--timeout", "60",
            *extra]


def interrupt_in_b_slow(sandbox, klass: Path, out: Path, temp: Path) -> Done:
    """``grade CLASS``, Ctrl-C (SIGINT to its process group) while b_slow is in progress."""
    temp.mkdir(parents=True, exist_ok=True)
    process = start(class_args(klass, out), grader_env(sandbox, temp))
    try:
        assert wait_for(lambda: (out / "a_fast.json").exists(), 240), "a_fast was never graded"
        time.sleep(4)  # b_slow's first call sleeps 10 s
        assert process.poll() is None, "the class ended before the interrupt"
        os.killpg(process.pid, signal.SIGINT)
        return finish(process, 90)
    finally:
        end_processes_using(temp)


def says_incomplete(text: str, tmp_path: Path | None = None) -> bool:
    """Whether ``text`` says incomplete or interrupted (the test's own paths, which may hold those words, aside)."""
    if tmp_path is not None:
        text = text.replace(str(tmp_path), "")
    return re.search(r"incomplete|interrupted", text, re.I) is not None


def test_an_interrupted_student_is_incomplete_earns_nothing_and_is_no_normal_row(sandbox, tmp_path):
    klass = course(tmp_path, INTERRUPT_CLASS)
    out = tmp_path / "grades"
    done = interrupt_in_b_slow(sandbox, klass, out, tmp_path / "tmp")
    assert done.code is not None, "the interrupted class did not stop"
    interrupted = out / "b_slow.json"
    if interrupted.exists():
        data = report(interrupted)
        grade = data.get("grade")
        assert says_incomplete(interrupted.read_text(), tmp_path), f"b_slow's report looks complete: {grade}"
        assert not (data.get("grade") or {}).get("score"), f"b_slow earned {data['grade']['score']}"
    summarised = run_grader(sandbox, ["grade", "--summarise", str(out), "--out", str(tmp_path / "summary")],
                            tmp_path / "tmp-summary")
    summary = tmp_path / "summary" / "summary.csv"
    if summarised.code == 0 and summary.exists():
        row = summary_rows(tmp_path / "summary").get("b_slow")
        assert row is None or says_incomplete(" ".join(row.values()), tmp_path), f"b_slow is a normal row: {row}"


def test_resume_keeps_the_finished_reports_and_grades_the_rest(sandbox, tmp_path):
    klass = course(tmp_path, INTERRUPT_CLASS)
    out = tmp_path / "grades"
    interrupt_in_b_slow(sandbox, klass, out, tmp_path / "tmp")
    finished = out / "a_fast.json"
    kept = (finished.read_bytes(), finished.stat().st_mtime_ns)
    done = run_grader(sandbox, class_args(klass, out, "7", "--resume"), tmp_path / "tmp-resume")
    assert done.code is not None, "the resumed grade hung"
    assert done.code != 2, f"--resume refused: {done.text[-1500:]}"
    assert (finished.read_bytes(), finished.stat().st_mtime_ns) == kept, "a_fast was graded again"
    for name in ("b_slow", "c_late"):
        data = report(out / f"{name}.json") if (out / f"{name}.json").exists() else {}
        assert "grade" in data and not says_incomplete(json.dumps(data.get("grade"))), f"{name} was not graded"
    assert {"a_fast", "b_slow", "c_late"} <= set(summary_rows(out)), done.text[-2000:]


def test_a_killed_class_leaves_no_temporary_files_and_no_summary_mixes_seeds(sandbox, tmp_path):
    klass = course(tmp_path, INTERRUPT_CLASS)
    out = tmp_path / "grades"
    first = tmp_path / "first-class"  # an earlier, complete grade of the same class with seed 7 (b_slow aside)
    first.mkdir()
    for name in ("a_fast", "c_late"):
        shutil.copytree(klass / name, first / name)
    earlier = run_grader(sandbox, class_args(first, out, "7"), tmp_path / "tmp-first")
    assert earlier.code is not None and (out / "summary.csv").exists(), earlier.text[-2000:]

    temp = tmp_path / "tmp"
    temp.mkdir()
    process = start(class_args(klass, out, "8"), grader_env(sandbox, temp))
    try:
        assert wait_for(lambda: (out / "a_fast.json").exists() and '"seed": 8' in (out / "a_fast.json").read_text(),
                        240), "a_fast was never graded again"
        time.sleep(4)
        assert process.poll() is None, "the class ended before the kill"
        os.kill(process.pid, signal.SIGKILL)  # the class process alone, as the OOM killer or a runner does
        finish(process, 30)
        gone = wait_for(lambda: not processes_using(temp), 20, 0.5)
        survivors = processes_using(temp)
    finally:
        end_processes_using(temp)
    left = sorted(str(p.relative_to(temp)) for p in temp.rglob("*")) if temp.exists() else []
    assert gone, f"processes of the killed grade still running 20 s later: {survivors}"
    assert left == [], f"left in the temporary folder: {left[:10]}"
    if (out / "summary.csv").exists():  # a summary left beside the reports must be theirs, not the earlier run's
        stale = {name: (row["seed"], report(out / f"{name}.json").get("seed"))
                 for name, row in summary_rows(out).items() if (out / f"{name}.json").exists()
                 and str(report(out / f"{name}.json").get("seed")) != row["seed"]}
        assert not stale, f"the summary in {out} disagrees with the reports beside it (summary, report): {stale}"
    summarised = run_grader(sandbox, ["grade", "--summarise", str(out), "--out", str(tmp_path / "summary")],
                            tmp_path / "tmp-summary")
    said = summarised.text + ((tmp_path / "summary" / "summary.md").read_text()
                              if (tmp_path / "summary" / "summary.md").exists() else "")
    flagged = re.search(r"seed.{0,80}(differ|disagree|mix|several|different|two)|"
                        r"(differ|disagree|mix|several|different|two).{0,80}seed", said, re.I | re.S)
    assert summarised.code != 0 or flagged, "a summary of reports from seeds 7 and 8 says nothing of it"
