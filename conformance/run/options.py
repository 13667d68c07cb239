"""The options of a run of the checks, each declared once: ``certify``'s flags and the pytest plugin's options.

``Options`` is the table. Each field is one option: its name, default, help and choices, with its two
spellings, the command line's (``--seed``) and pytest's (``--conformance-seed``). ``add_arguments`` makes the
command line's argparse flags from it, ``add_pytest_options`` the plugin's; ``Options.from_namespace`` and
``Options.from_pytest`` read either back. An option with one spelling exists on that side alone: ``--workers``,
``--verbose`` and ``--progress`` are the command line's (under pytest they are pytest-xdist's ``-n``, pytest's
``-v`` and its own output), ``--conformance-summary`` is pytest's (``certify`` always prints the report).

Only the standard library here: ``--help`` builds the parser from this table.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from conformance.boundary.isolation import (
    CELL_TIME_S,
    WORKER_MEMORY_MIB,
    WORKER_TOTAL_S,
    existing_folder,
    variable_set_here,
)

IMPL_HELP = "implementation to certify: a built-in name (reference), module:attribute, or a .py file"
PYTEST_DEST = "conformance_{}"  # pytest keeps every option in one namespace: the suite's carry its name


@dataclass(frozen=True)
class Spelling:
    """How one option is spelt on each side, and shown in ``--help``."""

    help: str
    cli: tuple[str, ...] = ()  # the command line's flags; () where the option is pytest's alone
    pytest: str | None = None  # pytest's flag; None where the option is the command line's alone
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    parse: Any = None  # an argparse ``type`` beyond the default's own (a check of the value)
    negative: str | None = None  # the flag that sets a three-valued option (None: the default) to False
    negative_help: str | None = None
    pytest_help: str | None = None  # where the command line's help names a flag pytest does not have


def option(default, help: str, **spelling):
    return field(default=default, metadata={"spelling": Spelling(help, **spelling)})


@dataclass(frozen=True)
class Options:
    """The options of one run of the checks: what ``certify`` parsed, or what pytest did."""

    json: str | None = option(None, "also write the JSON report to PATH", cli=("--json",),
                              pytest="--conformance-json", metavar="PATH")
    workers: int = option(1, "run checks in N processes (pytest-xdist)", cli=("--workers",), metavar="N")
    seed: int = option(0, "seed for random inputs (default 0)", cli=("--seed",), pytest="--conformance-seed",
                       metavar="SEED")
    select: str | None = option(
        None, "only checks matching EXPR (pytest -k)", cli=("-k",), pytest="--conformance-select", metavar="EXPR")
    profile: str = option(
        "ci", "hypothesis profile (grade: examples drawn from --seed, as grade runs them)", cli=("--profile",),
        pytest="--conformance-profile", choices=("ci", "thorough", "grade"),
        pytest_help="hypothesis profile: ci (deterministic, fast), thorough (certification) or grade (ci's size,"
                    " examples drawn from --hypothesis-seed: inputs a submission cannot predict)")
    no_training: bool = option(False, "skip the training-convergence checks", cli=("--no-training",),
                               pytest="--no-training")
    no_diagnosis: bool = option(False, "verdicts only: do not look for the known bug behind each failure (faster)",
                                cli=("--no-diagnosis",), pytest="--conformance-no-diagnosis")
    dtype: str | None = option(
        None, "compute in this dtype: float16 or bfloat16 (half precision: what the adapter declares in"
              " Conventions.dtypes), float32 or float64 (default: the dtype the adapter declares)", cli=("--dtype",),
        pytest="--conformance-dtype", choices=("float16", "bfloat16", "float32", "float64"))
    timeout: float = option(60.0, "seconds one adapter call may take", cli=("--timeout",), pytest="--check-timeout",
                            metavar="TIMEOUT")
    threads: int = option(
        1, "torch intra-op threads (default 1, fastest on the checks' tiny tensors; 0: torch's)", cli=("--threads",),
        pytest="--conformance-threads", metavar="N")
    strict: bool = option(False, "count the suite's own conventions (advisory checks: a fully masked row) as failures",
                          cli=("--strict",), pytest="--conformance-strict")
    deviations: str | None = option(
        None, "the implementation's known deviations (TOML, docs/deviations.md): reported apart",
        cli=("--deviations",), pytest="--conformance-deviations", metavar="FILE")
    verbose: bool = option(False, "also show pytest's own output", cli=("-v", "--verbose"))
    progress: str = option(
        "auto", "progress on stderr while checks run: a live line on a terminal, plain lines otherwise or under CI"
                " (auto, the default)", cli=("--progress",), choices=("auto", "live", "plain", "off"))
    no_cache: bool = option(
        False, "recompute the known bugs' answers a diagnosis compares with, instead of reading those kept by earlier"
               " runs (in $CONFORMANCE_CACHE_DIR or ~/.cache/transformer-conformance; CONFORMANCE_CACHE=0 does the"
               " same)", cli=("--no-cache",), pytest="--conformance-no-cache")
    summary: bool = option(False, "print one line per check, grouped by section", pytest="--conformance-summary")
    # The isolation: where the implementation runs, and the limits of its worker.
    isolate: bool | None = option(
        None, "run the implementation in a sandboxed worker process (default for a path to a .py file)",
        cli=("--isolate",), pytest="--isolate", negative="--no-isolate",
        negative_help="run it in this process (default for built-ins and module:attribute)")
    worker_memory: int = option(WORKER_MEMORY_MIB,
                                f"address-space limit of the isolated worker (default {WORKER_MEMORY_MIB})",
                                cli=("--worker-memory",), pytest="--worker-memory", metavar="MIB")
    worker_total_timeout: float = option(
        WORKER_TOTAL_S, f"wall-clock seconds the isolated implementation may use in all (default {WORKER_TOTAL_S:g})",
        cli=("--worker-total-timeout",), pytest="--worker-total-timeout", metavar="S")
    pass_env: tuple[str, ...] = option(
        (), "give the isolated worker this variable of this environment, with its value (repeatable; the worker's"
            " environment is otherwise minimal). Passing a secret to a submission hands it to its author",
        cli=("--pass-env",), pytest="--pass-env", metavar="NAME", parse=variable_set_here)
    allow_read: tuple[str, ...] = option(
        (), "let the isolated worker read PATH and what is beneath it (repeatable; it reads only its own folder,"
            " Python and its packages, and its temporary folder otherwise)",
        cli=("--allow-read",), pytest="--allow-read", metavar="PATH", parse=existing_folder)

    cell_timeout: float = option(
        CELL_TIME_S, f"seconds each code cell of a notebook may run; then it is stopped and the next one runs (default"
                     f" {CELL_TIME_S:g})", cli=("--cell-timeout",), pytest="--cell-timeout", metavar="S")

    def __post_init__(self):
        for name in REPEATED:  # each variable or path once, in the order given
            object.__setattr__(self, name, tuple(dict.fromkeys(getattr(self, name) or ())))

    @classmethod
    def from_namespace(cls, args) -> Options:
        """The options ``args`` (an argparse namespace) has; the others at their defaults."""
        return cls(**{o.name: getattr(args, o.name) for o in TABLE if o.cli and hasattr(args, o.name)})

    @classmethod
    def from_pytest(cls, config) -> Options:
        """The options of a pytest run (``config.getoption``); those of the command line alone at their defaults."""
        return cls(**{o.name: config.getoption(o.dest) for o in TABLE if o.pytest})

    def publish(self, config) -> None:
        """Set pytest's options to these (``Run.publish``)."""
        for o in TABLE:
            if o.pytest:
                value = getattr(self, o.name)
                setattr(config.option, o.dest, list(value) if o.name in REPEATED else value)

    def as_plain(self) -> dict:
        """Plain data (for pytest-xdist's workers): ``Options(**options.as_plain())`` is ``options``."""
        return {name: list(value) if isinstance(value, tuple) else value
                for name, value in dataclasses.asdict(self).items()}


@dataclass(frozen=True, kw_only=True)
class Declared(Spelling):
    """One row of the table: a field of ``Options``, its default and its spelling."""

    name: str
    default: Any

    @property
    def dest(self) -> str:
        return PYTEST_DEST.format(self.name)

    def kwargs(self, *, default, help: str, dest: str) -> dict:
        """argparse's (and so pytest's) ``add_argument`` keywords for this option."""
        if self.negative:
            return {"dest": dest, "action": "store_const", "const": True, "default": default, "help": help}
        if self.default is False:
            return {"dest": dest, "action": "store_true", "default": default, "help": help}
        found = {"dest": dest, "default": default, "help": help, "metavar": self.metavar}
        if self.choices:
            found["choices"] = self.choices
        if isinstance(self.default, tuple):
            found.update(action="append", default=list(default), type=self.parse)
        elif type(self.default) in (int, float):
            found["type"] = type(self.default)
        return found

    def negative_kwargs(self, *, dest: str) -> dict:
        return {"dest": dest, "action": "store_const", "const": False, "help": self.negative_help}


TABLE: tuple[Declared, ...] = tuple(Declared(name=f.name, default=f.default, **vars(f.metadata["spelling"]))
                                    for f in dataclasses.fields(Options))
REPEATED = tuple(o.name for o in TABLE if isinstance(o.default, tuple))
BY_NAME = {o.name: o for o in TABLE}
CERTIFY = ("json", "workers", "seed", "select", "profile", "dtype", "no_training", "no_diagnosis", "timeout", "threads",
           "strict", "deviations", "verbose", "progress", "no_cache")
ISOLATION = ("isolate", "worker_memory", "worker_total_timeout", "pass_env", "allow_read", "cell_timeout")


def add_arguments(parser, *names: str, **changed: dict) -> None:
    """The command-line flags of the options ``names``, in that order. ``changed``: per option, the ``default``
    or ``help`` a command gives it (``grade`` draws its seed, isolates by default)."""
    for name in names:
        declared = BY_NAME[name]
        given = {"default": declared.default, "help": declared.help, **changed.get(name, {})}
        if declared.negative:
            group = parser.add_mutually_exclusive_group()
            group.add_argument(*declared.cli, **declared.kwargs(**given, dest=name))
            group.add_argument(declared.negative, **declared.negative_kwargs(dest=name))
        else:
            parser.add_argument(*declared.cli, **declared.kwargs(**given, dest=name))


def add_pytest_options(group) -> None:
    """The plugin's pytest options: ``--impl`` (the command line's positional IMPL), then every option of the
    table that pytest has."""
    group.addoption("--impl", action="append", default=[], metavar="IMPL", help=IMPL_HELP)
    for declared in TABLE:
        if not declared.pytest:
            continue
        help = declared.pytest_help or declared.help
        group.addoption(declared.pytest, **declared.kwargs(default=declared.default, help=help, dest=declared.dest))
        if declared.negative:
            group.addoption(declared.negative, **declared.negative_kwargs(dest=declared.dest))
