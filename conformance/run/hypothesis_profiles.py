"""Hypothesis profiles: ``ci`` is deterministic and quick, ``thorough`` is for certification.

None keeps an example database, so a certification run writes nothing into the candidate's folder, and none
prints Hypothesis's ``@reproduce_failure`` blob: it names Hypothesis's version (a report would change with every
release) and means nothing outside the suite's own tests; each failure's reproduction is the report's
``transformer-conformance certify ... -k CHECK --seed S`` line.
"""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, settings

# The `check` recorder is function-scoped on purpose: it accumulates margins over all examples.
# filter_too_much: an example whose configuration the candidate cannot build is rejected (a skipped example,
# counted in the report); a candidate that supports few configurations rejects many.
_SUPPRESSED = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.differing_executors,
               HealthCheck.filter_too_much]
# No explain phase: it lists the suite's own source lines ("/path/to/conformance/compare.py:98") under a
# failing example, which depend on where the suite is installed and say nothing to the candidate's author.
_PHASES = [phase for phase in Phase if phase is not Phase.explain]

settings.register_profile(
    "conformance-ci", max_examples=15, derandomize=True, deadline=None, database=None,
    print_blob=False, suppress_health_check=_SUPPRESSED, phases=_PHASES,
)
settings.register_profile(  # grading: ci's size, but examples drawn from the run's seed (--hypothesis-seed)
    "conformance-grade", max_examples=15, deadline=None, database=None,
    print_blob=False, suppress_health_check=_SUPPRESSED, phases=_PHASES,
)
settings.register_profile(
    "conformance-thorough", max_examples=200, deadline=None, database=None,
    print_blob=False, suppress_health_check=_SUPPRESSED, phases=_PHASES,
)


def load_profile(name: str) -> None:
    settings.load_profile(f"conformance-{name}")
