"""Every check says what its verdict rests on: a sentence of the paper or the lessons, or a suite convention."""

from pathlib import Path

import pytest

from conformance.cli import checks_dir
from conformance.paper import claims


class Items:
    def __init__(self):
        self.items = []

    def pytest_collection_modifyitems(self, items):
        self.items = list(items)


# The reference has the bare parts, so the checks of the composite ones (attention_sublayer, ffn_sublayer) are
# deselected for it; the walk-through's adapter has only the composite ones: together they collect every check.
WALKTHROUGH = str(Path(__file__).parents[1] / "docs" / "walkthrough" / "my_adapter.py")


@pytest.fixture(scope="module")
def checks():
    """Every check: a float32 run's and a half-precision run's (its hazard checks run only there)."""
    items = []
    for dtype in ([], ["--conformance-dtype", "float16"]):
        collector = Items()
        pytest.main([str(checks_dir()), "--impl", "reference", "--impl", WALKTHROUGH, "--collect-only", "-q",
                     "-p", "no:cacheprovider", "--import-mode=importlib", "-o", "addopts=", *dtype,
                     "-c", str(checks_dir() / "pytest.ini"), "--rootdir", str(checks_dir())], plugins=[collector])
        items += collector.items
    return items


def test_every_check_declares_its_claim(checks):
    assert len(checks) > 90
    missing = [item.name for item in checks if claims.of(item) is None]
    assert missing == []
    for item in checks:
        claim = claims.of(item)
        assert claim["source"] in claims.SOURCES and claim["where"] and len(claim["text"]) > 20, item.name


def test_the_suites_conventions_are_few_and_listed_in_the_docs(checks):
    """A convention never decides conformance; each is named in docs/claims.md so users know what is advisory."""
    conventions = sorted({item.originalname.removeprefix("test_") for item in checks if claims.is_convention(item)})
    assert conventions == ["fully_masked_row_gives_zero_weights_and_only_b_O",
                           "fully_masked_row_gives_zero_weights_and_output",
                           "fully_masked_source_sentence_is_invisible_to_the_decoder",
                           "layers_use_the_lessons_layer_norm_epsilon",
                           "source_longer_than_1024_tokens_is_encoded"]
    docs = (Path(__file__).parents[1] / "docs" / "claims.md").read_text()
    assert all(f"`{name}`" in docs for name in conventions)


def test_the_audit_table_in_the_docs_matches_the_markers(checks):
    """docs/claims.md lists every check with its source; it must not go stale."""
    docs = (Path(__file__).parents[1] / "docs" / "claims.md").read_text()
    table = {}
    for line in docs.split("## The audit")[1].splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`"):
            table[cells[0].strip("`")] = cells[2]
    marked = {item.originalname.removeprefix("test_"): claims.of(item)["source"] for item in checks}
    assert table == marked
