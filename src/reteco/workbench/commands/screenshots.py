"""``python -m reteco.workbench.commands.screenshots --out DIR``: the detailed results pages, as a person sees them.

Builds the synthetic release and its dev reference data (as ``make score`` does), runs the
Codabench scoring program on every starting-kit sample submission in the Development phase
(per-topic figures shown) and in the Evaluation phase (withheld), plus one refused submission,
and writes a PNG of each ``detailed_results.html`` at 1280 px and at 390 px (a phone) into DIR,
with the pages themselves in ``DIR/html``. Each page is also measured: wider than the window,
a console error, a request for anything but the page itself, or a headline figure that is not
visible is reported, and the exit code is 1.

The browser is Debian's ``chromium`` (``apt-get install -y chromium``; another binary through
``RETECO_CHROMIUM``), headless, driven through the DevTools protocol over a websocket on
127.0.0.1 with the standard library only. ``Chromium`` is also what the browser test uses.

This module is a command: it sits beside the page it photographs, but builds its pages with the
scoring program (``reteco.codabench``), imported where it is used.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from reteco.workbench.codabench.chromium import CHROMIUM_ENV, WIDTHS, Chromium, find_chromium

PHASE_KEYS = ("development", "evaluation")


@dataclass(frozen=True)
class SamplePage:
    """One page the scoring program wrote: which sub-track and phase, where, its headline text."""

    name: str  # "1a-development", "2a-refused"
    subtrack: str
    phase: str
    path: Path
    headline: str | None  # the headline as the page must show it: "0.4583" or "absent" (None: a refusal)


def build_pages(work: Path, samples: Path | None = None) -> list[SamplePage]:
    """Run the scoring program on every sample submission, Development and Evaluation, in ``work``.

    Also one refused submission (2a, a run that is not a TREC run), whose page has no headline.
    """
    from reteco.codabench.program import scoring_program
    from reteco.commands.demo import SAMPLES
    from reteco.formats.phase_record import PHASE_FILE
    from reteco.outputs.charts import number
    from reteco.outputs.results import DETAILED_RESULTS
    from reteco.release.prepare import prepare_release
    from reteco.release.synthetic.release import write_synthetic_release
    from reteco.subtracks import JUDGE_MEAN, SUBTRACK_IDS, SUBTRACKS
    from reteco.workbench.codabench.bundle import competition

    samples = Path(samples) if samples is not None else SAMPLES
    work = Path(work)
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet):
        release = write_synthetic_release(work / "synthetic_release")
        prepare_release(release, "dev", work / "reference")
    phases = {p.key: p for p in competition.PHASES}
    pages = []
    jobs = [(s, p, samples / s) for s in SUBTRACK_IDS for p in PHASE_KEYS]
    broken = work / "refused-run"
    broken.mkdir(parents=True, exist_ok=True)
    (broken / "run.txt").write_text("this is not a run <b>bold</b>\n", encoding="utf-8")
    jobs.append(("2a", "development", broken))
    for subtrack, phase_key, submission in jobs:
        name = f"{subtrack}-{phase_key}" if submission != broken else f"{subtrack}-refused"
        task = work / "tasks" / name
        shutil.rmtree(task, ignore_errors=True)
        shutil.copytree(work / "reference" / subtrack, task / "input" / "ref")
        record = competition.phase_record(phases[phase_key], subtrack)
        (task / "input" / "ref" / PHASE_FILE).write_text(json.dumps(record), encoding="utf-8")
        shutil.copytree(submission, task / "input" / "res")
        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            status = scoring_program.main([str(task / "input"), str(task / "output")])
        page = task / "output" / DETAILED_RESULTS
        headline = None
        if status == 0:
            scores = json.loads((task / "output" / "scores.json").read_text(encoding="utf-8"))
            key = SUBTRACKS[subtrack].official or JUDGE_MEAN
            headline = number(scores[key]) if key in scores else "absent"
        pages.append(SamplePage(name, subtrack, phase_key, page, headline))
    return pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reteco.workbench.commands.screenshots", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the PNGs (and html/ with the pages)")
    parser.add_argument("--build", type=Path, help="working folder (default: a temporary one)")
    parser.add_argument("--page", type=Path, action="append", default=[], help="also photograph this HTML page")
    args = parser.parse_args(argv)
    executable = find_chromium()
    if executable is None:
        print(f"error: no Chromium: install Debian's chromium (apt-get install -y chromium) or set {CHROMIUM_ENV}",
              file=sys.stderr)  # fmt: skip
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="reteco-pages-") as scratch:
        work = args.build or Path(scratch)
        pages = build_pages(work)
        pages += [SamplePage(p.stem, "", "", p, None) for p in args.page]
        (args.out / "html").mkdir(exist_ok=True)
        failures = 0
        with Chromium(executable) as browser:
            for page in pages:
                shutil.copyfile(page.path, args.out / "html" / f"{page.name}.html")
                for width in WIDTHS:
                    report = browser.open(page.path, width)
                    png = args.out / f"{page.name}-{width}.png"
                    browser.screenshot(png)
                    problems = report.problems(page.headline)
                    failures += bool(problems)
                    status = "; ".join(problems) if problems else "ok"
                    print(f"{png}: {report.scroll_width} px of {width}; {status}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
