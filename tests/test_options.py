"""One option table (conformance/run/options.py) and one run object (conformance/run/runs.py).

Every option of a run is declared once, in ``Options``: certify's flags and the pytest plugin's options are made
from it, with the same defaults; no module declares one by hand. The command line hands pytest a ``Run`` (no
argv strings for the suite's options), pytest-xdist's workers get it as plain data, a check reading pytest's
options reads the run's. No module of the package keeps control in a global it rebinds from a function.
"""

import argparse
import ast
import json
from pathlib import Path

import pytest

from conformance.cli import build_parser
from conformance.run import options, plugin, session
from conformance.run.options import TABLE, Options
from conformance.run.runs import Run

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_FOLDERS = [ROOT / name for name in ("conformance", "reports", "implementations", "fixtures")]
# Options one side has alone, on purpose (options.py's docstring says why).
CLI_ONLY = {"workers", "verbose", "progress"}
PYTEST_ONLY = {"summary"}


def subparser(name: str):
    parser = build_parser()
    return next(action for action in parser._subparsers._group_actions if action.dest == "command").choices[name]


def cli_actions(name: str = "certify") -> dict:
    return {flag: action for action in subparser(name)._actions for flag in action.option_strings}


class Group:
    """Stands in for pytest's parser and its option group: records what the plugin declares."""

    def __init__(self):
        self.declared: list[tuple[tuple[str, ...], dict]] = []

    def getgroup(self, name, description=""):
        return self

    def addoption(self, *names, **attrs):
        self.declared.append((names, attrs))


def pytest_options() -> dict:
    """The plugin's pytest options: flag -> ``addoption``'s keywords (pytest hands them to argparse)."""
    group = Group()
    plugin.pytest_addoption(group)
    return {name: attrs for names, attrs in group.declared for name in names}


def plain(value):
    return list(value) if isinstance(value, (list, tuple)) else value


@pytest.mark.parametrize("declared", TABLE, ids=lambda declared: declared.name)
def test_each_option_is_a_cli_flag_and_a_pytest_option_with_the_table_s_default(declared):
    assert bool(declared.cli) == (declared.name not in PYTEST_ONLY)
    assert bool(declared.pytest) == (declared.name not in CLI_ONLY)
    if declared.cli:
        action = cli_actions()[declared.cli[0]]
        assert action.dest == declared.name
        assert (plain(action.default), action.help, action.choices) == (
            plain(declared.default), declared.help, declared.choices)
    if declared.pytest:
        attrs = pytest_options()[declared.pytest]
        assert attrs["dest"] == declared.dest and plain(attrs["default"]) == plain(declared.default)
        assert attrs.get("choices") == declared.choices
    if declared.negative:
        assert cli_actions()[declared.negative].dest == declared.name
        assert pytest_options()[declared.negative]["dest"] == declared.dest


def test_parsing_either_side_gives_the_same_options():
    argv = ["--seed", "7", "--no-training", "--isolate", "--pass-env", "PATH", "--pass-env", "PATH",
            "--worker-memory", "1024"]
    from_cli = Options.from_namespace(build_parser().parse_args(["certify", "reference", "-k", "pe_", *argv]))
    parser = argparse.ArgumentParser()
    for flag, attrs in pytest_options().items():
        parser.add_argument(flag, **attrs)
    spelt = {"-k": "--conformance-select", "--seed": "--conformance-seed"}
    namespace = parser.parse_args([spelt.get(arg, arg) for arg in ["-k", "pe_", *argv]])

    class Config:
        @staticmethod
        def getoption(dest):
            return getattr(namespace, dest)

    from_pytest = Options.from_pytest(Config)
    assert from_pytest == from_cli
    assert (from_cli.seed, from_cli.select, from_cli.isolate, from_cli.pass_env) == (7, "pe_", True, ("PATH",))


def declared_flags(tree: ast.AST) -> list[tuple[str, int]]:
    """The flags of every ``add_argument``/``addoption`` call written out in a module, with their lines."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("add_argument", "addoption"):
            found += [(arg.value, node.lineno) for arg in node.args
                      if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("-")]
    return found


def test_no_option_of_the_table_is_declared_by_hand_elsewhere():
    """The options pytest has, in either spelling (those the command line has alone, like ``-v``, are other
    tools' flags too)."""
    flags = {flag for declared in TABLE if declared.pytest
             for flag in (*declared.cli, declared.pytest, declared.negative) if flag}
    flags |= {"--impl"}
    by_hand = []
    for folder in PACKAGE_FOLDERS:
        for path in folder.rglob("*.py"):
            if path == Path(options.__file__).resolve():
                continue
            tree = ast.parse(path.read_text(), str(path))
            by_hand += [f"{path.relative_to(ROOT)}:{line}: {flag}" for flag, line in declared_flags(tree)
                        if flag in flags or flag.startswith("--conformance-")]
    assert not by_hand, "declare these in conformance/run/options.py (Options):\n" + "\n".join(by_hand)


def test_the_by_hand_scan_sees_a_flag_written_out(tmp_path):
    """The scan above is not blind: a hand-written ``--seed`` is found."""
    tree = ast.parse("def f(parser):\n    parser.add_argument('--seed', type=int, default=0)\n")
    assert declared_flags(tree) == [("--seed", 2)]


def rebinding_globals(tree: ast.AST) -> list[tuple[str, int]]:
    return [(name, node.lineno) for node in ast.walk(tree) if isinstance(node, ast.Global) for name in node.names]


def test_no_module_rebinds_a_global_from_a_function():
    """Control travels on objects (the run, the check), not in module globals a function sets."""
    found = []
    for folder in PACKAGE_FOLDERS:
        for path in folder.rglob("*.py"):
            found += [f"{path.relative_to(ROOT)}:{line}: global {name}"
                      for name, line in rebinding_globals(ast.parse(path.read_text(), str(path)))]
    assert not found, "\n".join(found)
    assert rebinding_globals(ast.parse("x = 0\ndef f():\n    global x\n    x = 1\n")) == [("x", 3)]


def test_the_run_s_options_reach_pytest_as_an_object_not_as_argv_strings():
    run = Run(["reference"], Options(seed=7, select="pe_", no_training=True, workers=2, profile="grade"))
    argv = session.run_argv(run)
    pytest_flags = {declared.pytest for declared in TABLE if declared.pytest} | {"--impl"}
    assert not [arg for arg in argv if arg.split("=")[0] in pytest_flags], argv
    assert "--hypothesis-seed=7" in argv and "-n" in argv  # pytest's and its plugins' own options stay options


class SeenByACheck:
    """What a check reading pytest's options (``request.config.getoption``) sees, once configured."""

    def pytest_collection_finish(self, session):
        self.seed = session.config.getoption("conformance_seed")
        self.impls = session.config.getoption("impl")


def test_a_check_reading_pytest_s_options_reads_the_run_s():
    run, seen = Run(["numpy"], Options(seed=11, select="pe_position_0")), SeenByACheck()
    code = pytest.main(session.pytest_argv("--collect-only", "-q"), plugins=[run, seen])
    assert code == 0 and (seen.seed, seen.impls) == (11, ["numpy"])


def test_run_goes_to_pytest_xdist_workers_as_plain_data():
    run = Run(["numpy", "mutant:pre_norm"], Options(seed=3, pass_env=("PATH",), isolate=False))
    sent = json.loads(json.dumps(run.for_workers()))  # what execnet carries: plain data
    again = Run.from_plain(sent)
    assert (again.impls, again.options, again.load_options()) == (run.impls, run.options, run.load_options())


def test_certify_in_workers_selects_and_seeds_as_a_serial_run(certify):
    """``--workers 2``: the checks run in pytest-xdist's workers, which get the run from their controller: its
    selection, its seed (in each result's reproduction line, written where the check ran)."""
    args = ("--no-training", "-k", "layer_norm_matches_formula or pe_position", "--seed", "5", "--no-diagnosis")
    serial, parallel = certify("numpy", *args), certify("numpy", *args, "--workers", "2")
    assert parallel.code == serial.code == 0
    assert parallel.statuses() == serial.statuses()
    assert len(parallel.statuses()) >= 2 and all("layer_norm_matches_formula" in cid or "pe_position" in cid
                                                 for cid in parallel.statuses())
    assert all(check["reproduction"].endswith("--seed 5") for check in parallel.report["checks"])
    assert (parallel.report["seed"], parallel.report["diagnosis"]) == (5, False)
