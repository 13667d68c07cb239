"""The HTML report as a person sees it: opened in a real browser (Debian's chromium, headless, driven by
playwright through its executable path; .ci/run installs it, nothing is downloaded at run time).

For a failing run (a mutant) and a passing run (the reference, with the training check): no console
error and no request leaves the file; every figure has rendered (each embedded PNG decodes to its
declared size and holds more than one colour, each SVG is laid out at its viewBox's aspect ratio);
failures come first; the page fits a phone's width. Screenshots go to the test's temporary directory.
"""

import os
import shutil
from pathlib import Path

import pytest
from conftest import PICTURED_RUN, TRAINED_REFERENCE_RUN, certify_quietly, shared_run

from conformance.reports import html_report
from conformance.results import FAILING

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
REQUIRED = os.environ.get("CONFORMANCE_REQUIRE_BROWSER") == "1"  # .ci/run: a missing browser fails, not skips
# Flags for a closed network and a root user (docs of this machine): no sandbox, no background traffic.
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
PHONE = {"width": 390, "height": 844}

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists() and not REQUIRED,
    reason="no chromium: `apt-get install chromium` (.ci/run does), or set CONFORMANCE_REQUIRE_BROWSER=1 to fail",
)

# Every <image> decoded in the page: its natural size and how many distinct colours a canvas reads back.
READ_IMAGES = """async () => Promise.all(Array.from(document.querySelectorAll('image[data-png-size]')).map(async el => {
    const img = new Image(); img.src = el.getAttribute('href'); await img.decode();
    const canvas = document.createElement('canvas'); canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
    const ctx = canvas.getContext('2d'); ctx.drawImage(img, 0, 0);
    const px = ctx.getImageData(0, 0, canvas.width, canvas.height).data; const seen = new Set();
    for (let i = 0; i < px.length; i += 4) seen.add(px[i] << 16 | px[i + 1] << 8 | px[i + 2]);
    return {declared: el.getAttribute('data-png-size'), natural: img.naturalWidth + 'x' + img.naturalHeight,
            colours: seen.size};
}))"""
READ_FIGURES = """() => Array.from(document.querySelectorAll('svg.figure')).map(svg => {
    const box = svg.getBoundingClientRect(); const vb = svg.viewBox.baseVal;
    return {width: box.width, height: box.height, ratio: vb.width / vb.height, children: svg.childElementCount};
})"""
STATUS_ORDER = "() => Array.from(document.querySelectorAll('[data-status]')).map(el => el.dataset.status)"


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """The session's shared runs, each made when a test first reads it: the failing one is tests/test_reports.py's,
    the passing one (the PE table, the attention and schedule checks, the checkpoint and every training check) is
    tests/test_training.py's slow one."""
    return {
        "failing": lambda: shared_run(tmp_path_factory, "mutant:attention_no_scaling", *PICTURED_RUN).report,
        "passing": lambda: shared_run(tmp_path_factory, "reference", *TRAINED_REFERENCE_RUN).report,
    }


def expected_figures(report: dict) -> int:
    """The SVGs the page should hold: PE (2), attention (2 per layer), schedule (1), training (3), differences."""
    count = 0
    for check in report["checks"]:
        data = check["data"] or {}
        count += 2 * ("pe" in data) + ("schedule" in data) + 3 * ("training" in data)
        count += 2 * len(data.get("attention", {}).get("layers", {}))
        count += bool(check.get("difference")) and check["status"] in FAILING
    return count


def open_page(browser, path: Path, viewport: dict):
    page = browser.new_page(viewport=viewport)
    problems = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning")
            else None)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("request", lambda r: None if r.url.startswith(("file:", "data:")) else problems.append(f"request {r.url}"))
    page.goto(path.as_uri(), wait_until="load")
    return page, problems


# The passing run trains the reference (tests/test_training.py's slow run, the one that draws the training curves).
@pytest.mark.parametrize("which", ["failing", pytest.param("passing", marks=pytest.mark.slow)])
def test_html_report_renders_in_a_real_browser(browser, runs, which, tmp_path):
    report = runs[which]()
    path = tmp_path / f"{which}.html"
    path.write_text(html_report.render(report))
    page, problems = open_page(browser, path, {"width": 1100, "height": 900})
    page.screenshot(path=str(tmp_path / f"{which}-top.png"))
    page.screenshot(path=str(tmp_path / f"{which}-full.png"), full_page=True)

    figures = page.evaluate(READ_FIGURES)
    assert len(figures) == expected_figures(report) > 0
    for figure in figures:
        assert figure["width"] > 50 and figure["children"] > 3, figure
        assert figure["width"] / figure["height"] == pytest.approx(figure["ratio"], rel=0.02), figure
    images = page.evaluate(READ_IMAGES)
    assert images and all(i["natural"] == i["declared"] and i["colours"] > 1 for i in images), images

    statuses = page.evaluate(STATUS_ORDER)
    failing = [s in FAILING for s in statuses]
    if which == "failing":
        assert failing[0] and page.locator("article.card.failure").count() == sum(failing) // 2
    else:
        assert not any(failing)
    assert problems == []
    page.close()


def test_html_report_fits_a_phone_screen(browser, runs, tmp_path):
    path = tmp_path / "failing.html"
    path.write_text(html_report.render(runs["failing"]()))
    page, problems = open_page(browser, path, PHONE)
    page.screenshot(path=str(tmp_path / "phone.png"))
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the page is {width} px wide on a {PHONE['width']} px screen"
    assert problems == []
    page.close()


# Code in the style of a real public implementation (The Annotated Transformer with pre-norm, final norms and a
# log_softmax generator), not a mutant: several deviations at once, named and measured.
REAL_STYLE = "tests/heldout_multi/annotated_prenorm_generator.py"
HYPOTHESIS_WORDS = ("Failing test case", "Falsifying example", "reproduce_" "failure", "check=check(")  # split: no
# expected text may name Hypothesis's own wording (test_report_snapshots.py)


def test_a_real_implementation_s_report_says_each_cause_once(browser, tmp_path):
    """Read as a learner reads it: the top (the profile) and one failure card, in a real browser, with their
    screenshots; the profile states each cause once, each card its likely cause once, and nothing of Hypothesis."""
    report = certify_quietly(tmp_path, REAL_STYLE, "--no-training", "--no-isolate",
                             "-k", "encoder_layer_matches_reference or logits_match_reference")
    path = tmp_path / "real.html"
    path.write_text(html_report.render(report))
    page, problems = open_page(browser, path, {"width": 1100, "height": 900})
    page.screenshot(path=str(tmp_path / "real-top.png"))
    profile = page.locator("div.profile").inner_text()
    (found,) = report["profile"].values()
    for cause in found["causes"]:
        assert profile.count(cause["text"]) == 1, profile
    card = page.locator("article.card.failure").first
    card.screenshot(path=str(tmp_path / "real-card.png"))
    cards = page.locator("article.card.failure")
    assert cards.count() == len([c for c in report["checks"] if c["status"] in FAILING])
    for i in range(cards.count()):
        text = cards.nth(i).inner_text()
        assert not any(word in text for word in HYPOTHESIS_WORDS), text
        check = next(c for c in report["checks"] if f"\n{c['id']}" in f"\n{text}" or c["id"] in text.split())
        cause = (check.get("likely_cause") or "").removeprefix("measured: ")
        if cause and not check.get("descriptions"):
            assert text.count(cause.split(" (mutant:")[0][:60]) == 1, text
    assert problems == []
    page.close()
