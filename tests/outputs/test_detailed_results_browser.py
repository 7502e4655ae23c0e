"""The detailed results page in a real headless Chromium, at 1280 px and at 390 px (a phone).

Every sub-track's page as the scoring program writes it, in the Development and Evaluation
phases, plus the 2b/2c pages with a (fake) judge and a refusal page: no wider than the window
(``document.documentElement.scrollWidth <= innerWidth``), nothing in the console, no request
but the page itself, and the headline figure drawn on the first screen, reading the figure of
scores.json. A control page with each fault shows that the measurement sees them.

Needs Debian's ``chromium`` (``apt-get install -y chromium``); skipped with a message without it.
The browser is driven over the DevTools protocol on 127.0.0.1 (``reteco.workbench.commands.screenshots``).
"""

from __future__ import annotations

import pytest
from support.detailed_results_samples import judged_pages, scoring_program_pages

from reteco.subtracks import SUBTRACK_IDS
from reteco.workbench.codabench.chromium import WIDTHS, find_chromium

if find_chromium() is None:
    pytest.skip(
        "Chromium is not installed (Debian: apt-get install -y chromium): the browser checks of the detailed "
        "results page did not run",
        allow_module_level=True,
    )

PAGES = [f"{s}-{p}" for s in SUBTRACK_IDS for p in ("development", "evaluation")]
PAGES += [f"{s}-judged-{p}" for s in ("2b", "2c") for p in ("development", "evaluation")]


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    found = scoring_program_pages(tmp_path_factory.mktemp("pages"))
    reference_root = found["1a-development"].path.parents[3] / "reference"
    found |= {name: sample for name, (sample, _, _) in judged_pages(tmp_path_factory.mktemp("judged"), reference_root).items()}
    return found


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", PAGES)
def test_the_page_fits_logs_nothing_and_shows_its_headline(pages, browser, name, width):
    sample = pages[name]
    assert sample.headline is not None
    report = browser.open(sample.path, width)
    assert report.problems(sample.headline) == []
    assert report.scroll_width <= report.inner_width == width
    # A figure is large; "absent (a)" (2b without the judge) is smaller, as its reason follows it.
    assert report.headline["fontSize"] >= (32 if sample.headline != "absent" else 24)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_refusal_page_fits_and_logs_nothing(pages, browser, width):
    report = browser.open(pages["2a-refused"].path, width)
    assert report.headline is None and report.problems(None) == []
    assert report.scroll_width <= width and not report.console_errors and not report.requests


def test_the_measurement_sees_overflow_console_errors_requests_and_a_hidden_headline(browser, tmp_path):
    bad = tmp_path / "bad.html"
    # No viewport tag, a 2000 px block, a missing image, a console error, a stylesheet from 127.0.0.1:9
    # (nothing listens there: the request fails without leaving the machine), a hidden headline.
    bad.write_text(
        "<!DOCTYPE html><html><head><link rel='stylesheet' href='http://127.0.0.1:9/x.css'></head><body>"
        "<p id='headline-value' style='visibility:hidden'>0.5000</p><div style='width:2000px'>wide</div>"
        "<img src='missing.png'><script>console.error('boom')</script></body></html>"
    )
    for width in WIDTHS:
        problems = browser.open(bad, width).problems("0.5000")
        assert any("px wide in a" in p for p in problems), problems
        assert any(p.startswith("console: boom") for p in problems), problems
        assert any("missing.png" in p for p in problems if p.startswith("request:")), problems
        assert any("127.0.0.1:9" in p for p in problems if p.startswith("request:")), problems
        assert "the headline figure is not drawn" in problems
    # At 390 px a page without the viewport tag is laid out 980 px wide: that too is seen.
    missing_tag = tmp_path / "no-viewport.html"
    missing_tag.write_text("<!DOCTYPE html><html><body><p id='headline-value'>0.5000</p></body></html>")
    assert browser.open(missing_tag, 390).problems("0.5000") != []
    assert browser.open(missing_tag, 1280).problems("0.5000") == []
    assert browser.open(missing_tag, 1280).problems("0.4000") == ["the headline reads '0.5000', not '0.4000'"]
