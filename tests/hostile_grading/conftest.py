"""The held-out hostile grading tests (issue 38) run only when asked: RUN_HELDOUT_GRADING=1.

The submissions beside them are data, not tests (none is named test_*.py)."""

import os

collect_ignore_glob = [] if os.environ.get("RUN_HELDOUT_GRADING") else ["test_*.py"]


def pytest_configure(config):
    config.addinivalue_line("markers", "heldout_grading: the held-out hostile grading tests of issue 38")
