"""The isolated worker's environment: minimal, plus what ``--pass-env NAME`` names; and errors that say so.

An adapter that finds its checkout through a variable (``os.environ["SOME_ROOT"]``) cannot load in the
sandbox unless the variable is passed: the load error names the variable, the sandbox and the two fixes
(``--pass-env``, ``--no-isolate``). The report records the names passed, never their values.
"""

import json
import os
import textwrap
from pathlib import Path

import pytest
from conftest import adapter_path

from conformance.boundary.isolation import environment
from conformance.boundary.isolation.proxy import Limits, RemoteException, load_isolated
from conformance.cli import EXIT_OK, EXIT_USAGE, main
from conformance.errors import LoadError

VALUE = "/secret/checkout-of-some-root"  # never written to a report
PE_ONLY = "pe_matches_published_values or pe_position_0"


@pytest.fixture
def some_root(monkeypatch):
    monkeypatch.setenv("SOME_ROOT", VALUE)
    monkeypatch.setenv("OTHER_SECRET", "not-for-the-worker")


def test_a_variable_read_at_import_fails_to_load_isolated_naming_it_the_sandbox_and_the_fixes(certify, some_root):
    run = certify(adapter_path("reads_some_root"), "-k", PE_ONLY)
    assert run.code == EXIT_USAGE, run.err
    assert "raised KeyError: 'SOME_ROOT'. SOME_ROOT is set in this environment, but the sandbox removed it from the" \
           " worker's. Fix: --pass-env SOME_ROOT, or --no-isolate to run in this process" in run.err, run.err
    assert "Fix the file's import-time code" not in run.err  # the file is right; the sandbox removed its input
    isolation = run.report["implementations"][0]["isolation"]
    assert isolation["isolated"] and isolation["limits"]["pass_env"] == [], isolation


def test_with_pass_env_it_loads_and_certifies_and_the_report_lists_the_name_not_the_value(certify, some_root):
    run = certify(adapter_path("reads_some_root"), "-k", PE_ONLY, "--pass-env", "SOME_ROOT")
    assert run.code == EXIT_OK, run.err
    assert {c["status"] for c in run.report["checks"]} == {"passed"}
    isolation = run.report["implementations"][0]["isolation"]
    assert isolation["isolated"] and isolation["limits"]["pass_env"] == ["SOME_ROOT"], isolation
    assert VALUE not in json.dumps(run.report) and "not-for-the-worker" not in json.dumps(run.report)


@pytest.mark.parametrize("command", [["certify", "reference"], ["grade", "submission_folder"]])
def test_a_name_not_set_here_is_a_usage_error_naming_it(command, capsys, monkeypatch):
    monkeypatch.delenv("SOME_ROOT", raising=False)
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--pass-env", "SOME_ROOT"])
    assert exit_.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert "argument --pass-env: 'SOME_ROOT' is not set in this environment" in err and "export SOME_ROOT=" in err


def test_the_worker_gets_its_own_variables_and_the_passed_ones_only(some_root, tmp_path):
    env = environment.worker_environment(tmp_path, tmp_path, 1, ("SOME_ROOT",))
    assert set(env) == {*environment.BASE, "SOME_ROOT"} and env["SOME_ROOT"] == VALUE
    assert "OTHER_SECRET" not in environment.worker_environment(tmp_path, tmp_path, 1)
    assert "OTHER_SECRET" in environment.removed(("SOME_ROOT",)) and "SOME_ROOT" not in environment.removed(
        ("SOME_ROOT",))


def test_grade_passes_what_is_named_and_nothing_else(some_root, tmp_path, capsys):
    """A submission that reads SOME_ROOT at import loads under grade only when it is passed; one that reads
    OTHER_SECRET, not passed, does not, and its report names the variable, never a value."""
    folder = tmp_path / "ada"
    folder.mkdir()
    source = Path(adapter_path("reads_some_root")).read_text()
    (folder / "adapter.py").write_text(source)
    report = tmp_path / "ada.json"
    assert main(["grade", str(folder), "--json", str(report), "-k", PE_ONLY, "--pass-env", "SOME_ROOT"]) == EXIT_OK
    graded = json.loads(report.read_text())
    assert graded["grade"]["score"] == graded["grade"]["max_score"] == 2
    assert graded["implementations"][0]["isolation"]["limits"]["pass_env"] == ["SOME_ROOT"]
    (folder / "adapter.py").write_text(source.replace('os.environ["SOME_ROOT"]', 'os.environ["OTHER_SECRET"]'))
    main(["grade", str(folder), "--json", str(report), "-k", PE_ONLY, "--pass-env", "SOME_ROOT"])
    graded = json.loads(report.read_text())
    assert graded["grade"]["score"] == 0
    isolation = graded["implementations"][0]["isolation"]  # the worker it was to load in
    assert isolation["isolated"] and isolation["limits"]["pass_env"] == ["SOME_ROOT"], isolation
    message = graded["checks"][0]["message"]
    assert "OTHER_SECRET is set in this environment, but the sandbox removed it" in message, message
    assert "not-for-the-worker" not in json.dumps(graded) and VALUE not in json.dumps(graded)


def test_a_load_error_after_a_removed_variable_was_looked_up_names_it(some_root, tmp_path, monkeypatch):
    """``os.getenv`` returns None and the import fails later: the variable cannot be told from the error, but the
    worker saw the import look it up and find nothing, and the sandbox removed it: that one is named (never a value),
    with the fixes; the other removed variable (CI), never looked up, is not."""
    for name in set(os.environ) - {"PATH", "HOME", "SOME_ROOT", "OTHER_SECRET"}:
        monkeypatch.delenv(name)
    monkeypatch.setenv("CI", "true")
    path = tmp_path / "getenv_adapter.py"
    path.write_text('import os\nROOT = os.getenv("SOME_ROOT") + "/src"\n')
    with pytest.raises(LoadError) as error:
        load_isolated(str(path), timeout_s=10, limits=Limits(pass_env=("OTHER_SECRET",)))
    assert str(error.value) == (
        f"importing {path} raised TypeError: unsupported operand type(s) for +: 'NoneType' and 'str'. Fix the file's"
        " import-time code. The import looked up SOME_ROOT, set in this environment; the sandbox removed it from the"
        " worker's, which holds only PATH, HOME, TMPDIR, the locale and thread counts and the variables passed"
        " (OTHER_SECRET). If the import needs it: --pass-env NAME (repeatable), or --no-isolate to run in this"
        " process")


def test_a_load_error_that_looked_up_no_removed_variable_says_nothing_of_the_environment(some_root, tmp_path):
    """A TypeError of the adapter's own, after looking up only a variable unset here too: the load error is about
    the adapter, with no paragraph on the variables the sandbox removed."""
    path = tmp_path / "typeerror_adapter.py"
    path.write_text('import os\nos.getenv("NOT_SET_ANYWHERE_HERE")\nWIDTH = len(3)\n')
    with pytest.raises(LoadError) as error:
        load_isolated(str(path), timeout_s=10)
    assert str(error.value) == (f"importing {path} raised TypeError: object of type 'int' has no len(). Fix the"
                                " file's import-time code"), str(error.value)


def test_many_removed_variables_are_counted_past_the_first_names():
    names = [f"V{i:02}" for i in range(15)]
    assert environment.fmt_names(names) == ", ".join(names[:12]) + " and 3 more"


def test_a_call_that_reads_a_removed_variable_names_it(some_root, tmp_path):
    path = tmp_path / "reads_at_call.py"
    path.write_text(textwrap.dedent('''
        import os
        from conformance import Conventions

        class Adapter:
            conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

            def positional_encoding(self, n, d_model):
                return os.environ["SOME_ROOT"]

            def layer_norm(self, x, gamma, beta, eps):
                return {"no": "such key"}["key"]

        adapter = Adapter()
    '''))
    candidate = load_isolated(str(path), timeout_s=10)
    try:
        with pytest.raises(RemoteException) as missing:
            candidate.adapter.positional_encoding(3, 4)
        assert type(missing.value).__name__ == "KeyError" and str(missing.value) == (
            "'SOME_ROOT' (SOME_ROOT is set in this environment, but the sandbox removed it from the worker's. Fix:"
            " --pass-env SOME_ROOT, or --no-isolate to run in this process)")
        with pytest.raises(RemoteException) as other:  # a KeyError of the adapter's own dict: nothing of the sandbox
            candidate.adapter.layer_norm(None, None, None, 1e-5)
        assert type(other.value).__name__ == "KeyError" and str(other.value) == "'key'"
    finally:
        candidate.adapter.close()


def test_only_a_lookup_in_os_environ_is_a_missing_variable():
    def lookup(mapping, key):
        try:
            mapping[key]
        except KeyError as exc:
            return exc

    missing = lookup(os.environ, "NO_SUCH_VARIABLE_HERE")
    assert environment.missing_variable(missing) == "NO_SUCH_VARIABLE_HERE"
    assert environment.missing_variable(lookup({}, "NO_SUCH_VARIABLE_HERE")) is None
    try:
        try:
            os.environ["NO_SUCH_VARIABLE_HERE"]
        except KeyError:
            raise RuntimeError("set NO_SUCH_VARIABLE_HERE") from None
    except RuntimeError as wrapped:
        assert environment.missing_variable(wrapped) == "NO_SUCH_VARIABLE_HERE"  # raised while handling it


def test_the_pytest_plugin_passes_the_variables_named_by_its_pass_env(pytester, some_root):
    from conformance.cli import checks_dir

    result = pytester.runpytest_subprocess(str(checks_dir()), "-p", "no:cacheprovider", "--import-mode=importlib",
                                           "-o", "addopts=", "--impl", adapter_path("reads_some_root"), "-k",
                                           "pe_position_0", "--pass-env", "SOME_ROOT")
    result.assert_outcomes(passed=1)  # without it: the load error above, as a usage error
