"""The leaderboard page in a real headless Chromium at 1280 and 390 px, at 9 and 180 systems
(2c: every column; synthetic scored submissions): the page never scrolls sideways (the ranking
scrolls in its box), its first columns stay pinned when the box is scrolled, the plots are shown
inline (the only requests are the page's own plots/ files), nothing in the console.

Needs Debian's ``chromium``; skipped with a message without it.
"""

from __future__ import annotations

import pytest

from reteco.workbench.codabench.chromium import WIDTHS, find_chromium
from reteco.workbench.leaderboard import standings as lb
from reteco.workbench.leaderboard.plots import write_plots
from reteco.workbench.leaderboard.synthetic_outcomes import synthetic_outcomes
from reteco.workbench.leaderboard.tables import write_tables

if find_chromium() is None:
    pytest.skip("Chromium is not installed (Debian: apt-get install -y chromium): the leaderboard page's browser "
                "checks did not run", allow_module_level=True)

# After scrolling the ranking's box all the way right: where its box, its first (pinned) cell
# and its last cell are drawn, and the images that loaded.
PINNED = """(() => {
  const box = document.querySelector('.scroll');
  const overflow = box.scrollWidth - box.clientWidth;
  box.scrollLeft = box.scrollWidth;
  const row = box.querySelectorAll('tr')[1];
  const first = row.cells[0].getBoundingClientRect(), second = row.cells[1].getBoundingClientRect();
  const last = row.cells[row.cells.length - 1].getBoundingClientRect(), b = box.getBoundingClientRect();
  const images = [...document.images].map(i => ({src: i.getAttribute('src'), loaded: i.complete && i.naturalWidth > 0}));
  return {overflow, boxLeft: b.left, boxRight: b.right, firstLeft: first.left, secondLeft: second.left,
          firstRight: first.right, lastRight: last.right, images};
})()"""


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    out = {}
    for teams in (3, 60):
        folder = tmp_path_factory.mktemp(f"board{teams}")
        entries, outcomes, units = synthetic_outcomes("2c", teams, 3)
        board = lb.build_leaderboard("2c", entries, outcomes, unit_keys=units, resamples=300)
        board["plots"] = write_plots(board, folder)
        write_tables(board, folder, top=20)
        out[teams * 3] = folder
    return out


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("systems", [9, 180])
def test_the_page_fits_pins_its_first_columns_and_shows_the_plots(pages, browser, systems, width, tmp_path):
    folder = pages[systems]
    report = browser.open(folder / "leaderboard.html", width)
    browser.screenshot(tmp_path / f"leaderboard-{systems}-{width}px.png")
    assert all(p.startswith("request: ") for p in report.problems(None))  # the plots: checked below
    assert report.scroll_width <= report.inner_width == width
    assert not report.console_errors
    assert all(url.startswith((folder / "plots").as_uri() + "/") for url in report.requests), report.requests
    seen = browser.send("Runtime.evaluate", expression=PINNED, returnByValue=True)["result"]["value"]
    # 2c has 16 figure columns: the ranking is wider than either window, and scrolls in its box.
    assert seen["overflow"] > 0
    # Scrolled to the end: the last column is in view, the rank and name columns still at the left.
    assert seen["lastRight"] <= seen["boxRight"] + 1
    assert abs(seen["firstLeft"] - seen["boxLeft"]) <= 1 and abs(seen["secondLeft"] - seen["firstRight"]) <= 1
    assert {i["src"] for i in seen["images"]} == {f"plots/{name}.svg" for name in
                                                   ("forest", "domain_heatmap", "depth_curves", "judge_dimensions")}
    assert all(i["loaded"] for i in seen["images"])
