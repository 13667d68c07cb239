"""What an isolated worker may read (``isolation/reads.py``, enforced by Landlock), what it sees of other processes
(its own PID namespace), and what the report says when the kernel cannot confine it.

A graded submission reads its own folder, Python and its packages, the adapter protocol's modules and its
temporary folder; nothing above its folder, no classmate, no home, none of the suite's checks, built-in
implementations, oracle or fixtures. ``certify`` lets it read the suite's code and implementations, never the
fixtures nor the oracle. ``--allow-read PATH`` adds a folder. Each refusal Python's own opens and listings show is
named in the report.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import conformance
from conformance.boundary.isolation import reads, walls
from conformance.boundary.isolation.proxy import Limits, load_isolated
from conformance.boundary.isolation.sandbox import READS_ABI, landlock_abi
from conformance.cli import EXIT_USAGE, main
from conformance.errors import LoadError
from conformance.run import runs

requires_reads_confined = pytest.mark.skipif(landlock_abi() < READS_ABI, reason="this kernel has no Landlock")
SUITE = Path(conformance.__file__).parent
IMPLEMENTATIONS = Path(conformance.__file__).parents[1] / "implementations"
FIXTURES = Path(__import__("conformance.fixtures").fixtures.__file__).parent

PROBE = '''
import os
import sys
from conformance import Conventions


def attempt(path):
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            with open(path, "rb") as file:
                file.read(1)
        return "read"
    except PermissionError:
        return "refused"
    except OSError as exc:
        return type(exc).__name__


class Adapter:
    conventions = Conventions(dtype="float64", framework="python")

    def learning_rate(self, step, d_model, warmup):
        return {name: attempt(path) for name, path in PATHS.items()}

    def parameter_count(self, config):
        import importlib
        found = {}
        for name in ("conformance.judging.checks.test_attention", "conformance.problems.oracle",
                     "conformance.boundary.isolation.worker", "conformance.implementations.reference.model",
                     "conformance.adapters.torch"):
            try:
                importlib.import_module(name)
                found[name] = "imported"
            except (ImportError, OSError):
                found[name] = "refused"
        return found

    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        return {"pid": os.getpid(), "parent": os.getppid(),
                "processes": sorted(int(p) for p in os.listdir("/proc") if p.isdigit())}


adapter = Adapter()
'''


def probe(tmp_path: Path, paths: dict[str, str], **limits) -> tuple[dict, dict, dict, dict]:
    """A submission in tmp_path/class/ada that reads ``paths``; (what it could read, which suite modules it could
    import, what it sees of processes, the isolation summary)."""
    own = tmp_path / "class" / "ada"
    own.mkdir(parents=True)
    (own / "notes.txt").write_text("mine")
    path = own / "adapter.py"
    path.write_text(f"PATHS = {paths!r}\n" + PROBE)
    candidate = load_isolated(str(path), timeout_s=60, limits=Limits(**limits))
    try:
        adapter = candidate.adapter
        outcome = (adapter.learning_rate(1, 2, 3), adapter.parameter_count({}),
                   adapter.label_smoothed_loss(None, None, 0.1, 0))
        return (*outcome, adapter.summary())
    finally:
        candidate.adapter.close()


def suite_files() -> dict[str, str]:
    oracle = SUITE / "problems" / "oracle.py"
    compiled = sorted((oracle.parent / "__pycache__").glob("oracle.*.pyc"))
    return {"fixtures": str(next(FIXTURES.glob("*.toml"))), "oracle": str(oracle),
            **({"oracle_compiled": str(compiled[0])} if compiled else {}),
            "checks": str(SUITE / "judging" / "checks" / "test_attention.py"),
            "worker": str(SUITE / "boundary" / "isolation" / "worker.py"),
            "reference": str(IMPLEMENTATIONS / "reference" / "model.py"), "protocol": str(SUITE / "adapter.py")}


@requires_reads_confined
def test_a_graded_submission_reads_its_folder_python_and_the_protocol_and_nothing_else(tmp_path):
    (tmp_path / "class" / "bob").mkdir(parents=True)
    (tmp_path / "class" / "bob" / "adapter.py").write_text("bob's")
    (tmp_path / "solution.py").write_text("the instructor's")
    paths = {"own": str(tmp_path / "class" / "ada" / "notes.txt"), "stdlib": json.__file__,
             "numpy": __import__("numpy").__file__, "classmate": str(tmp_path / "class" / "bob" / "adapter.py"),
             "class_folder": str(tmp_path / "class"), "above": str(tmp_path / "solution.py"),
             "home": str(Path.home()), **suite_files()}
    read, imports, _, isolation = probe(tmp_path, paths, hide_suite_code=True,
                                        own_folder=str(tmp_path / "class" / "ada"))
    assert {name for name, outcome in read.items() if outcome == "read"} == {"own", "stdlib", "numpy", "protocol"}
    # refused by Landlock; in bubblewrap most are not there at all (what is, an empty folder, Landlock refuses)
    not_read = {"refused", "FileNotFoundError"} if isolation["walls"]["bubblewrap"] else {"refused"}
    assert {outcome for name, outcome in read.items() if name not in ("own", "stdlib", "numpy", "protocol")} <= \
        not_read
    assert imports == {"conformance.judging.checks.test_attention": "refused", "conformance.problems.oracle": "refused",
                       "conformance.boundary.isolation.worker": "refused",
                       "conformance.implementations.reference.model": "refused",
                       "conformance.adapters.torch": "imported"}
    assert isolation["reads_confined"] and isolation["landlock_abi"] >= READS_ABI
    refused = {(r["what"], r["path"]) for r in isolation["refused"]}
    assert ("read", paths["classmate"]) in refused and ("list", paths["class_folder"]) in refused
    assert ("read", paths["oracle"]) in refused


@requires_reads_confined
def test_certify_lets_it_read_the_suites_code_and_implementations_not_the_fixtures_nor_the_oracle(tmp_path):
    read, imports, _, _ = probe(tmp_path, suite_files())
    assert {name for name, outcome in read.items() if outcome == "read"} == {"checks", "worker", "reference",
                                                                            "protocol"}
    assert imports["conformance.implementations.reference.model"] == "imported"
    assert imports["conformance.problems.oracle"] == "refused"


@requires_reads_confined
def test_allow_read_adds_a_folder_and_the_report_lists_it(tmp_path):
    data = tmp_path / "shared-data"
    data.mkdir()
    (data / "vocab.txt").write_text("words")
    read, _, _, isolation = probe(tmp_path, {"data": str(data / "vocab.txt")}, allow_read=(str(data),))
    assert read == {"data": "read"} and isolation["limits"]["allow_read"] == [str(data)]


def test_allow_read_of_a_path_that_does_not_exist_is_a_usage_error_naming_it(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["certify", "reference", "--allow-read", "/no/such/folder"])
    assert exit_.value.code == EXIT_USAGE
    assert "argument --allow-read: '/no/such/folder' does not exist" in capsys.readouterr().err


@requires_reads_confined
def test_an_import_refused_a_read_says_what_and_how_to_allow_it(certify, tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "helpers.py").write_text("X = 1\n")
    (tmp_path / "adapter").mkdir()
    path = tmp_path / "adapter" / "adapter.py"
    path.write_text(f"import sys\nsys.path.insert(0, {str(tmp_path / 'lib')!r})\nimport helpers\n")
    run = certify(str(path), "-k", "pe_position_0")
    assert run.code == EXIT_USAGE
    assert f"The sandbox refused: list {tmp_path / 'lib'}." in run.err
    assert f"reads only its own folder ({tmp_path / 'adapter'})" in run.err and "--allow-read PATH" in run.err
    run = certify(str(path), "-k", "pe_position_0", "--allow-read", str(tmp_path / "lib"))
    assert "The sandbox refused" not in run.err and "has no attribute 'adapter'" in run.err  # past the import


@requires_reads_confined
def test_an_honest_isolated_run_is_refused_nothing(tmp_path, certify):
    """torch, numpy and the reference read only what the worker may read: no refusal in the report (a refusal
    there always means the implementation tried something)."""
    run = certify("reference", "--isolate", "--no-training", "-k",
                  "pe_position_0 or layer_norm_matches_published_example or logits_match_reference or lrate_matches")
    isolation = run.report["implementations"][0]["isolation"]
    assert set(run.statuses().values()) == {"passed"}
    assert isolation["reads_confined"] and isolation["refused"] == [] and isolation["refused_total"] == 0
    assert "sandbox" not in run.out


def pe_only_submission(tmp_path: Path, fill: str) -> Path:
    """A graded submission ``ada`` whose positional encoding is ``np.<fill>((n, d_model))``: zeros pass position 0,
    ones fail it."""
    folder = tmp_path / "ada"
    folder.mkdir()
    (folder / "adapter.py").write_text(textwrap.dedent(f'''
        import numpy as np
        from conformance import Conventions

        class Adapter:
            conventions = Conventions(dtype="float64", framework="numpy")

            def positional_encoding(self, n, d_model):
                return np.{fill}((n, d_model))

        adapter = Adapter()
    '''))
    return folder


def without_landlock(monkeypatch) -> None:
    """Every worker of this test's runs applies no Landlock (as on a kernel without it)."""
    real = runs.limits
    monkeypatch.setattr(runs, "limits", lambda *a, **k: Limits(**{**real(*a, **k).__dict__, "landlock": False}))


def test_without_landlock_the_report_and_the_grade_say_reads_are_not_confined(tmp_path, capsys, monkeypatch):
    without_landlock(monkeypatch)
    monkeypatch.setenv("CONFORMANCE_BUBBLEWRAP", "off")  # bubblewrap's binds would confine the reads
    folder = pe_only_submission(tmp_path, "zeros")
    report = tmp_path / "graded.json"
    main(["grade", str(folder), "--json", str(report), "-k", "pe_position_0", "--gradescope",
          str(tmp_path / "results.json")])
    out, graded = capsys.readouterr().out, json.loads(report.read_text())
    assert graded["implementations"][0]["isolation"]["reads_confined"] is False
    assert graded["grade"]["reads_confined"] is False and graded["grade"]["confinement"].startswith(
        "reads not confined: this kernel has no Landlock")
    assert "sandbox: reads not confined" in out and "; reads not confined: this kernel has no Landlock" in out
    assert "reads not confined" in json.loads((tmp_path / "results.json").read_text())["output"]


@pytest.mark.parametrize("bubblewrap", ["off", "on"])
def test_a_grade_says_which_walls_stood(tmp_path, capsys, monkeypatch, bubblewrap):
    """Where bubblewrap, Landlock and namespaces are all missing (simulated: CONFORMANCE_BUBBLEWRAP=off,
    CONFORMANCE_NAMESPACES=off, Landlock not applied) the grade still runs, fails closed (a failing check: exit 1)
    and says what was missing; with them, which stood. The walls line is the grader's, never the worker's word."""
    if bubblewrap == "on" and walls.bubblewrap() is None:
        pytest.skip("bubblewrap is not installed here")
    if bubblewrap == "off":
        without_landlock(monkeypatch)
        monkeypatch.setenv("CONFORMANCE_BUBBLEWRAP", "off")
        monkeypatch.setenv("CONFORMANCE_NAMESPACES", "off")
    folder = pe_only_submission(tmp_path, "ones")
    report = tmp_path / "graded.json"
    code = main(["grade", str(folder), "--json", str(report), "-k", "pe_position_0", "--gradescope",
                 str(tmp_path / "results.json")])
    out, graded = capsys.readouterr().out, json.loads(report.read_text())
    line = graded["grade"]["walls"]
    assert code == 1 and line in out and line in json.loads((tmp_path / "results.json").read_text())["output"]
    isolation = graded["implementations"][0]["isolation"]
    if bubblewrap == "off":
        assert isolation["walls"]["bubblewrap"] is False and isolation["pid_namespace"] is False
        assert line.startswith("sandbox: no bubblewrap") and "no Landlock" in line
        # seccomp needs no namespace
        assert "the worker's own walls (its claim): no sockets, io_uring or System V IPC" in line
        assert graded["grade"]["reads_confined"] is False
    else:
        assert isolation["walls"]["bubblewrap"] is True and isolation["walls"]["network"] == "none"
        assert line.startswith("sandbox: bubblewrap (read-only files, no network, a 256 MiB tmpfs)")
        assert graded["grade"]["reads_confined"] is True


def test_the_processes_the_worker_sees_are_its_own(tmp_path):
    _, _, processes, isolation = probe(tmp_path, {})
    if not isolation["pid_namespace"]:
        pytest.skip("this kernel refused a PID namespace: the docs say what stays visible")
    if isolation["walls"]["bubblewrap"]:  # its supervisor is the sandbox's first process, and all it sees besides
        assert processes["pid"] == 2 and processes["parent"] == 1 and processes["processes"] == [1, 2]
        return
    assert processes["pid"] == 1 and processes["parent"] == 0  # process 1 of its namespace: no parent in sight
    if isolation["private_proc"]:
        assert processes["processes"] == [1]


def test_the_adapter_protocol_imports_only_modules_a_graded_submission_may_read():
    """Every module of the suite that ``from conformance import ...`` (each name of the facade) and the helpers
    of ``conformance.adapters`` import is in ``reads.ADAPTER_API`` or the helpers' folder: a graded submission
    that uses them loads."""
    code = ("import sys, conformance, conformance.adapters, conformance.adapters.torch\n"
            "[getattr(conformance, name) for name in conformance.__all__]\n"
            "print(' '.join(name for name in sys.modules if name.split('.')[0] == 'conformance'))")
    done = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.split())
    allowed = set(reads.ADAPTER_API)
    assert {name for name in loaded if name not in allowed and not name.startswith(reads.ADAPTER_HELPERS)} == set()


def test_a_package_on_a_path_the_worker_does_not_read_is_named_with_its_folder(tmp_path, monkeypatch):
    """A package this process imports from outside the Python installation (a site folder a .pth file added, an
    editable install's checkout): the worker's import path leaves it out, so the import fails; the load error says
    where the package lies here and the --allow-read that lets the worker read it, which then loads."""
    site = tmp_path / "extra-site"
    (site / "outside_package").mkdir(parents=True)
    (site / "outside_package" / "__init__.py").write_text("VALUE = 3\n")
    monkeypatch.syspath_prepend(str(site))  # as a .pth line would put it on this process's path
    (tmp_path / "adapter").mkdir()
    path = tmp_path / "adapter" / "adapter.py"
    path.write_text("import outside_package\nadapter = None\n")
    with pytest.raises(LoadError) as refused:
        load_isolated(str(path), timeout_s=20)
    assert (f"outside_package is installed here in {site.resolve()}, outside the Python installation" in
            str(refused.value)), str(refused.value)
    assert f"Fix: --allow-read {site.resolve()}, or --no-isolate" in str(refused.value), str(refused.value)
    with pytest.raises(LoadError) as loaded:  # past the import: the adapter itself is None
        load_isolated(str(path), timeout_s=20, limits=Limits(allow_read=(str(site),)))
    assert "outside_package" not in str(loaded.value), str(loaded.value)


def test_an_import_that_writes_beside_itself_is_told_the_sandbox_refused_the_write_and_how_to_run_unsandboxed(
        certify, tmp_path):
    """A tutorial repository that creates its checkpoint folder at import: the worker's files are read-only, and the
    load error says which path, why, and the two fixes (the code's, or --no-isolate for code the user trusts)."""
    path = tmp_path / "adapter.py"
    path.write_text("import os\nos.makedirs(os.path.join(os.path.dirname(__file__), 'checkpoints'))\nadapter = None\n")
    run = certify(str(path))
    assert run.code == 2, run.out
    assert f"({tmp_path / 'checkpoints'}) the sandbox does not let it" in run.err, run.err
    assert run.err.rstrip().endswith("--no-isolate"), run.err
