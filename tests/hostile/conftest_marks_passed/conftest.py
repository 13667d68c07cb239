"""Part of an attack (see adapter.py): rewrite every test report to "passed", and leave a mark that it ran."""

from pathlib import Path

import pytest

Path(__file__).with_name("CONFTEST_WAS_IMPORTED").write_text("the grader imported the submission's conftest.py")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome, report.longrepr = "passed", None
