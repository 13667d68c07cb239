"""One run of the checks, as an object: what the command line built, handed to pytest whole.

``certify``, ``grade``, ``list`` and the kill matrix build a ``Run`` (the implementations, the parsed options,
the candidates loaded before pytest starts, the isolation's limits, the declared deviations, more pytest
plugins) and pass it to ``pytest.main(..., plugins=[run, ...])``; the plugin (``conformance.run.plugin``)
reads it from there. A plain ``pytest --impl ...`` builds it from pytest's options, through the same table
(``conformance.run.options``), and pytest-xdist's workers from what their controller sends them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conformance.run.options import Options


def limits(options: Options, *, hide_suite_code: bool = False, own_folder: str | None = None):
    """The isolated worker's limits (``isolation.proxy.Limits``) the options set; ``grade`` hides the suite's
    code from a submission and names its folder."""
    from conformance.boundary.isolation.proxy import Limits

    total = options.worker_total_timeout
    return Limits(memory_mib=options.worker_memory, total_s=total, cpu_s=int(total), hide_suite_code=hide_suite_code,
                  pass_env=options.pass_env, own_folder=own_folder, allow_read=options.allow_read,
                  cell_s=options.cell_timeout)


@dataclass(eq=False)  # one object per run, compared (and hashed, as a pytest plugin) by identity
class Run:
    impls: list[str]
    options: Options = field(default_factory=Options)
    limits: Any = None  # the isolation's ``Limits``; None: those the options set (``limits``), at the first load
    candidates: dict = field(default_factory=dict)  # spec -> Candidate, loaded before pytest started (the CLI's)
    deviations: list | None = None  # the declared deviations, loaded; None: read from options.deviations at the start
    plugins: list = field(default_factory=list)  # more pytest plugins of this run: the profiler's, the CLI's wait
    renderings: dict[str, str] = field(default_factory=dict)  # format -> path: --html, --junit, ... (reports.formats)
    warm: Any = None  # ``isolation.warm.WarmWorkers`` the isolated workers fork from; None: each a new interpreter

    def load_options(self) -> dict:
        """``loading.load``'s keyword arguments: every candidate of the run is loaded with these."""
        if self.limits is None:  # built when first needed: a run with nothing to load imports no isolation
            self.limits = limits(self.options)
        return {"timeout_s": self.options.timeout, "isolate": self.options.isolate, "limits": self.limits,
                "threads": self.options.threads, "warm": self.warm, "dtype": self.options.dtype}

    def publish(self, config) -> None:
        """Set pytest's options to the run's, so that what a check reads (``request.config.getoption``) is the run's."""
        self.options.publish(config)
        config.option.impl = list(self.impls)

    def for_workers(self) -> dict:
        """What pytest-xdist's workers rebuild the run from (``from_plain``): plain data. Each loads its candidates."""
        return {"impls": list(self.impls), "options": self.options.as_plain()}

    @classmethod
    def from_plain(cls, plain: dict) -> Run:
        return cls(list(plain["impls"]), Options(**plain["options"]))

    @classmethod
    def from_pytest(cls, config) -> Run:
        return cls(list(config.getoption("impl")), Options.from_pytest(config))
