"""The agreement page (``agreement.html``) in a real headless Chromium at 1280 px and at 390 px:
no wider than the window, no table or plot cut (each drawn inside the window, none scrolled
within itself), nothing in the console, no request. Judge-human and judge-judge pages; a
control page with a table too wide shows that the measurement sees it.

Needs Debian's ``chromium``; skipped with a message without it (as the detailed results page's
browser test, ``test_detailed_results_browser.py``)."""

from __future__ import annotations

import pytest

from reteco.commands import main
from reteco.workbench.codabench.chromium import WIDTHS, find_chromium

if find_chromium() is None:
    pytest.skip("Chromium is not installed (Debian: apt-get install -y chromium): the agreement page's browser "
                "checks did not run", allow_module_level=True)

JUDGE = "gpt-judge@0123456789abcdef"
HEADER = "item_id,conversation_id,dimension,rater,score,system"
DIMENSIONS = ("correctness", "completeness", "relevance", "coherence", "faithfulness")

# Every table and plot: its right edge and whether it is scrolled (content wider than its box).
MEASURE_BLOCKS = """(() => [...document.querySelectorAll('table, svg')].map(e => {
  const r = e.getBoundingClientRect();
  return {tag: e.tagName, left: r.left, right: r.right, cut: e.scrollWidth > e.clientWidth + 1};
}))()"""


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """The two pages written by `reteco agreement` on 40 items of 20 conversations, 4 systems, three
    humans and a judge on every dimension (long file names, as an organizer's folders give)."""
    root = tmp_path_factory.mktemp("agreement_page")
    judge, humans, second = [HEADER], [HEADER], [HEADER]
    for k in range(40):
        conv, system = f"conversation-{k // 2}", f"system-{k % 4}"
        for n, d in enumerate(DIMENSIONS):
            h = 1 + (k * (n + 1)) % 5
            judge.append(f"item-{k:04d},{conv},{d},{JUDGE},{min(5, h + k % 2)},{system}")
            second.append(f"item-{k:04d},{conv},{d},other@fedcba9876543210,{max(1, h - k % 3)},{system}")
            humans += [f"item-{k:04d},{conv},{d},annotator-{a},{min(5, max(1, h + (k + a) % 3 - 1))},{system}"
                       for a in (1, 2, 3)]
    folder = root / ("a-rather-long-folder-name-of-the-organizers-ratings-" * 2)
    folder.mkdir()
    files = {}
    for name, lines in (("judge", judge), ("humans", humans), ("second", second)):
        files[name] = folder / f"{name}-ratings-of-the-sample.csv"
        files[name].write_text("\n".join(lines) + "\n")
    base = ["agreement", "--judge", str(files["judge"]), "--resamples", "100"]
    assert main([*base, "--human", str(files["humans"]), "--out", str(root / "humans")]) == 0
    assert main([*base, "--second-judge", str(files["second"]), "--out", str(root / "judges")]) == 0
    return {"humans": root / "humans" / "agreement.html", "judges": root / "judges" / "agreement.html"}


def blocks(browser) -> list[dict]:
    return browser.send("Runtime.evaluate", expression=MEASURE_BLOCKS, returnByValue=True)["result"]["value"]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["humans", "judges"])
def test_the_page_fits_the_window_and_no_table_is_cut(pages, browser, name, width):
    report = browser.open(pages[name], width)
    assert report.problems(None) == []
    found = blocks(browser)
    assert sum(b["tag"] == "TABLE" for b in found) >= 2 and sum(b["tag"] == "svg" for b in found) >= 4
    assert [b for b in found if b["left"] < 0 or b["right"] > width or b["cut"]] == []


def test_the_measurement_sees_a_cut_table(browser, tmp_path):
    page = tmp_path / "wide.html"
    page.write_text("<!DOCTYPE html><html><head><meta name='viewport' content='width=device-width'></head><body>"
                    "<div style='overflow-x:auto'><table><tr>" + "<td>alongcellwithoutanyspaceinit</td>" * 20
                    + "</tr></table></div></body></html>")
    for width in WIDTHS:
        report = browser.open(page, width)
        assert report.problems(None) == []  # the page itself does not overflow: the table is cut inside it
        assert [b for b in blocks(browser) if b["right"] > width], width
