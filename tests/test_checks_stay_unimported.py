"""The checks are collected by the plugin inside a certify run, never imported by the suite's own tests.

Hypothesis fixes a test's settings when ``@given`` decorates it, that is when its module is first imported:
a check module imported by a test of this suite (whose default profile reports function-scoped fixtures)
keeps that profile for every later certify in the same process, and its check ends in error
(FailedHealthCheck on the ``check`` fixture) only when the tests run in that order. What a test needs from a
check belongs in ``conformance`` proper (``conformance.diagnosis.counts.second_size``, for instance).
"""

import re
from pathlib import Path

TESTS = Path(__file__).parent
IMPORT = re.compile(r"^\s*(from conformance\.checks\b|import conformance\.checks\b)", re.MULTILINE)


def test_no_test_imports_a_check_module():
    importing = sorted(path.name for path in TESTS.rglob("*.py") if IMPORT.search(path.read_text()))
    assert importing == [], f"these tests import a check module (move what they need out of it): {importing}"
