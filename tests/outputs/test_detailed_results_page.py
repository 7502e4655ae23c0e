"""The detailed results page (reteco.outputs.detailed_results) and its charts, read as HTML.

Pages of the starting kit's samples as the scoring program writes them (Development and
Evaluation), 2b/2c pages with a (fake) judge, and hand-made details for the edge cases: escaping,
aggregate-only pages, the headline, absent reasons said once, the charts of every sub-track, no
external reference, well-formed HTML, no reference data.
"""

from __future__ import annotations

import contextlib
import copy
import json
import re
import sqlite3
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest
from support.detailed_results_samples import judged_pages, output_of, scoring_program_pages
from support.paths import SAMPLES

from reteco.formats.reference import Reference
from reteco.outputs import charts, detailed_results, page_html, page_sections, results
from reteco.outputs.charts import Bar, Point, bar_chart, depth_curve, number
from reteco.scoring.submission import score_submission
from reteco.subtracks import DIMENSIONS, JUDGE, JUDGE_MEAN, KEYS, SUBTRACK_IDS, SUBTRACKS

DEV = {"phase": "development", "name": "Development", "split": "dev", "per_topic": True}
EVAL = {"phase": "evaluation", "name": "Evaluation", "split": "test", "per_topic": False}
VOID = {"meta", "br", "hr", "img", "input", "link", "wbr", "source", "area", "base", "col", "embed", "track"}
# Every element the page may hold: anything else (script, img, iframe, a participant's <i>) fails.
ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "main", "header", "footer", "section", "h1", "h2", "h3",
    "p", "b", "span", "code", "ul", "li", "div", "table", "thead", "tbody", "tr", "th", "td", "dl", "dt", "dd",
    "figure", "figcaption", "details", "summary", "br",
    "svg", "desc", "rect", "line", "text", "polyline", "circle",
}  # fmt: skip


class Page(HTMLParser):
    """A parsed page: structure errors, tags, attributes, text per id, the SVG charts."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.source = text
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tags: Counter = Counter()
        self.attributes: list[tuple[str, str, str]] = []
        self.by_id: dict[str, str] = {}
        self._open_ids: list[tuple[int, str]] = []
        self.svgs: list[dict] = []
        self._svg: dict | None = None
        self._in: list[str] = []
        self.text = []
        self.feed(text)
        self.close()
        if self.stack:
            self.errors.append(f"unclosed: {self.stack}")

    def handle_starttag(self, tag, attrs):
        self._start(tag, attrs)
        if tag not in VOID:
            self.stack.append(tag)
            element_id = dict(attrs).get("id")
            if element_id:
                self._open_ids.append((len(self.stack), element_id))
                self.by_id[element_id] = ""

    def handle_startendtag(self, tag, attrs):
        self._start(tag, attrs)

    def _start(self, tag, attrs):
        self.tags[tag] += 1
        for name, value in attrs:
            self.attributes.append((tag, name, value or ""))
        if tag == "svg":
            self._svg = {"attrs": dict(attrs), "title": "", "desc": "", "texts": [], "rects": [], "lines": [],
                         "polylines": [], "circles": []}  # fmt: skip
            self.svgs.append(self._svg)
        elif self._svg is not None and tag in ("rect", "line", "polyline", "circle"):
            self._svg[tag + "s"].append(dict(attrs))
        self._in.append(tag)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()
        while self._open_ids and self._open_ids[-1][0] > len(self.stack):
            self._open_ids.pop()
        if tag == "svg":
            self._svg = None

    def handle_data(self, data):
        self.text.append(data)
        for _, element_id in self._open_ids:
            self.by_id[element_id] += data
        if self._svg is not None and self.stack:
            inner = self.stack[-1]
            if inner in ("title", "desc") and self.stack[-2:-1] == ["svg"]:
                self._svg[inner] += data
            elif inner == "text":
                self._svg["texts"].append(data)

    def visible_text(self) -> str:
        return "".join(self.text)

    def chart(self, title_start: str) -> dict:
        found = [s for s in self.svgs if s["title"].startswith(title_start)]
        assert len(found) == 1, f"{len(found)} charts titled {title_start!r}: {[s['title'] for s in self.svgs]}"
        return found[0]


def assert_sound(page: Page) -> None:
    """Well-formed, only the expected elements, nothing loaded from anywhere, a viewport tag."""
    assert page.errors == []
    assert set(page.tags) <= ALLOWED_TAGS, set(page.tags) - ALLOWED_TAGS
    assert page.tags["html"] == page.tags["body"] == page.tags["main"] == 1
    lowered = page.source.lower()
    assert "http" not in lowered and "//" not in lowered, "an external reference"
    assert "url(" not in lowered and "@import" not in lowered
    for tag, name, value in page.attributes:
        assert not name.startswith("on"), f"an event handler on <{tag}>"
        if name in ("src", "href", "srcset", "action", "xlink:href"):
            assert value.startswith("data:") or value.startswith("#"), f"<{tag} {name}={value!r}>"
    assert ("meta", "name", "viewport") in page.attributes
    assert any(t == "meta" and n == "content" and "width=device-width" in v for t, n, v in page.attributes)


# ---------------------------------------------------------------------------------------------
# The sample pages


@pytest.fixture(scope="module")
def program_pages(tmp_path_factory):
    return scoring_program_pages(tmp_path_factory.mktemp("pages"))


@pytest.fixture(scope="module")
def judged(tmp_path_factory, program_pages):
    reference_root = program_pages["1a-development"].path.parents[3] / "reference"
    return judged_pages(tmp_path_factory.mktemp("judged"), reference_root)


def read(path: Path) -> Page:
    return Page(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("subtrack", SUBTRACK_IDS)
@pytest.mark.parametrize("phase", ["development", "evaluation"])
def test_every_sample_page_is_sound_and_headlined(program_pages, subtrack, phase):
    sample = program_pages[f"{subtrack}-{phase}"]
    scores, details = output_of(sample)
    page = read(sample.path)
    assert_sound(page)
    row = SUBTRACKS[subtrack]
    key = row.official or JUDGE_MEAN
    headline = page.by_id["headline-value"].strip()
    if row.official is not None:
        assert headline == f"{scores[key]:.4f}"
        assert "Official figure" in page.by_id["headline"] and KEYS[key].title in page.by_id["headline"]
        assert KEYS[key].meaning in page.by_id["headline"] and row.unit in page.by_id["headline"]
    else:  # 2b: no official figure; the judge did not run in the scoring program
        assert "has no official figure" in page.by_id["headline"]
        assert headline == "absent (a)" and key not in scores
        assert f"(a) {KEYS[JUDGE_MEAN].title}" in page.by_id["headline"]
    # Every leaderboard key is on the page, with its value or marked absent.
    board = page.by_id["leaderboard"]
    for k in row.keys:
        assert KEYS[k].title in board and KEYS[k].meaning in board
        assert (f"{scores[k]:.4f}" in board) if k in scores else (k in details["absent_scores"])
    # ... and each absent key is marked so on the page itself, once.
    assert board.count("absent (") == len([k for k in row.keys if k not in scores])


@pytest.mark.parametrize("subtrack", SUBTRACK_IDS)
def test_evaluation_pages_are_aggregate_only_and_say_so_once(program_pages, subtrack):
    development = read(program_pages[f"{subtrack}-development"].path)
    evaluation = read(program_pages[f"{subtrack}-evaluation"].path)
    _, dev_details = output_of(program_pages[f"{subtrack}-development"])
    ids = _topic_ids(dev_details)
    assert ids, "the development details name no topic"
    shown = development.visible_text()
    assert all(i in shown for i in ids)  # the check below can fail
    assert not [i for i in ids if i in evaluation.source]
    assert evaluation.source.count(detailed_results.WITHHELD) == 1 and detailed_results.WITHHELD not in development.source
    assert "per-topic" not in evaluation.by_id and "per-topic" in development.by_id
    # The aggregates stay: the per-domain chart of the headline figure is on both pages.
    assert any(s["title"].endswith("per domain") for s in evaluation.svgs)


def test_per_topic_sections_in_details_are_not_shown_in_a_phase_that_withholds_them(program_pages):
    """The page decides by the phase, whatever the caller left in details."""
    scores, details = output_of(program_pages["1b-development"])
    page = Page(detailed_results.render(subtrack="1b", phase=EVAL, scores=scores, details=details))
    assert not [i for i in _topic_ids(details) if i in page.source]
    assert page.source.count(detailed_results.WITHHELD) == 1


def _topic_ids(details: dict) -> set[str]:
    """Every topic key and bare topic id of the per-topic sections."""
    rows = [*details.get("per_unit", []), *details.get("per_step", []), *(details.get("generation") or {}).get("per_turn", [])]
    keys = {r.get(f) for r in rows for f in ("unit", "step", "turn") if r.get(f)}
    return keys | {k.split("/", 1)[1] for k in keys}


def test_identical_absent_reasons_are_said_once(program_pages):
    page = read(program_pages["2c-development"].path)
    scores, details = output_of(program_pages["2c-development"])
    absent = details["absent_scores"]
    assert set(JUDGE) <= set(absent) and absent["judge_mean"] == results.JUDGE_NOT_RUN
    for reason in set(absent.values()):
        assert page.source.count(page_html.escape(reason)) == 1, reason
    # The scorer's own sentence on why the judge did not run is the absent keys' reason: said once,
    # and the log's restatement is not added.
    assert page.source.count(page_html.escape(details["generation"]["judge"]["reason"])) == 1
    assert "the judge did not run:" not in page.source.replace("The judge did not run for this submission", "")
    # Each absent key in the table points at its note.
    board = page.by_id["leaderboard"]
    assert board.count("absent (a)") == len(JUDGE) and board.count("absent (b)") == 1
    assert "absent: " + results.JUDGE_NOT_RUN in page.by_id["headline"]


def test_absent_reasons_grouped_by_hand_and_taken_from_details_when_not_given():
    scores = {"ndcg_10": 0.5, "map_10": 0.4, "recall_10": 0.3, "p_10": 0.2, "mrr": 0.6, "ndcg_10_domain_macro": 0.5,
              "tp_10": 0.1, "tr_10": 0.1}  # fmt: skip
    same = "no query of the reference has a required time period"
    page = Page(detailed_results.render(subtrack="1a", phase=DEV, scores=scores, details={},
                                        absent={"tc_10": same, "ndcg_fc_10": same}))  # fmt: skip
    assert page.source.count(same) == 1
    assert "(a) Temporal Coverage@10, nDCG|FC@10" in page.by_id["headline"]
    # No reasons given: the scorer's, from details (the temporal status; the judge's reason).
    details = {"temporal": {"ndcg_fc_10_status": "undefined: no query reaches full temporal coverage at 10"}}
    page = Page(detailed_results.render(subtrack="1a", phase=DEV, scores={**scores, "tc_10": 0.5}, details=details))
    assert "absent: undefined: no query reaches full temporal coverage at 10" in page.by_id["headline"]
    generation = {"generation": {"judge": {"ran": False, "reason": "no API key"},
                                 "text_metrics": {"meteor": {"available": False, "reason": "no WordNet"}}}}  # fmt: skip
    page = Page(detailed_results.render(subtrack="2b", phase=DEV, scores={"rouge_l": 0.3}, details=generation))
    headline = page.by_id["headline"]
    assert headline.count("the judge did not run: no API key") == 1 and "(b) METEOR: absent: no WordNet" in headline
    assert "(c) BERTScore F1: absent: not computed (no reason was recorded)" in headline


def test_a_judged_page_shows_the_dimensions_counts_and_signature(judged):
    sample, scores, details = judged["2b-judged-development"]
    page = read(sample.path)
    assert_sound(page)
    judge = details["generation"]["judge"]
    assert page.by_id["headline-value"].strip() == f"{scores[JUDGE_MEAN]:.4f}"
    chart = page.chart("The five judge dimensions")
    for d in DIMENSIONS:
        assert f"{KEYS[d].title} {scores[d]:.4f}" in chart["attrs"]["aria-label"]
    assert f"judge mean {scores[JUDGE_MEAN]:.4f}" in chart["attrs"]["aria-label"]
    panel = page.by_id["judge"]
    assert judge["signature"] in panel and judge["model"] in panel
    faithfulness = judge["per_dimension"]["faithfulness"]
    assert faithfulness["invalid"] > 0, "the fake judge gave no invalid judgment"
    cells = _table_row(sample.path.read_text(), "Faithfulness (judge)")
    assert cells == [KEYS["faithfulness"].title, f"{scores['faithfulness']:.4f}", str(faithfulness["valid"]),
                     str(faithfulness["invalid"]), str(faithfulness["error"]), str(faithfulness["missing_answer"]),
                     str(faithfulness["turns_averaged"])]  # fmt: skip
    # The invalid judgments are in the warnings; the per-turn table has the 1-5 scores, and "invalid".
    assert "gave no valid score" in page.by_id["warnings"]
    assert "Per turn (51)" in page.by_id["per-topic"] and "invalid" in page.by_id["per-topic"]
    assert "fake rationale" not in page.source  # rationales stay in details.json


def _table_row(source: str, first_cell: str) -> list[str]:
    """The cell texts of the judge table's row whose first cell is ``first_cell``."""
    for row in re.findall(r"<tr>(.*?)</tr>", source):
        cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        if cells and cells[0] == first_cell and len(cells) == 7:
            return cells
    raise AssertionError(f"no row {first_cell!r}")


# ---------------------------------------------------------------------------------------------
# Charts per sub-track


CHARTS = {
    "1a": ["nDCG@10 per domain", "Temporal diagnostics"],
    "1b": ["nDCG@10 per domain", "Temporal diagnostics"],
    "2a": ["nDCG@10 per domain", "nDCG@10 by turn depth"],
    "2b": ["ROUGE-L per domain", "ROUGE-L by turn depth", "METEOR per domain", "METEOR by turn depth"],
    "2c": ["nDCG@10 per domain", "nDCG@10 by turn depth", "ROUGE-L per domain", "ROUGE-L by turn depth",
           "METEOR per domain", "METEOR by turn depth"],
}  # fmt: skip


@pytest.mark.parametrize("subtrack", SUBTRACK_IDS)
def test_the_charts_of_each_subtrack_read_their_values(program_pages, subtrack):
    for phase in ("development", "evaluation"):
        page = read(program_pages[f"{subtrack}-{phase}"].path)
        _, details = output_of(program_pages[f"{subtrack}-{phase}"])
        assert len(page.svgs) == len(CHARTS[subtrack]) and all(page.chart(t) for t in CHARTS[subtrack])
        for svg in page.svgs:
            assert svg["attrs"]["role"] == "img" and svg["attrs"]["aria-label"].startswith(svg["title"])
        if SUBTRACKS[subtrack].official:
            chart = page.chart("nDCG@10 per domain")
            for domain, figures in details["per_domain"].items():
                assert f"{domain} {figures['ndcg_10']:.4f} ({figures['units']} " in chart["attrs"]["aria-label"]
                assert f"{figures['ndcg_10']:.4f}" in chart["texts"]  # drawn as text too
            assert f"overall {details['overall']['ndcg_10']:.4f}" in chart["attrs"]["aria-label"]
        if "per_depth" in details:
            chart = page.chart("nDCG@10 by turn depth")
            assert [t for t in chart["texts"] if re.fullmatch(r"T\d\+?", t)] == list(details["per_depth"])
            for group, figures in details["per_depth"].items():
                assert f"{group} {figures['ndcg_10']:.4f} ({figures['units']} turns)" in chart["attrs"]["aria-label"]
        if SUBTRACKS[subtrack].temporal:
            chart = page.chart("Temporal diagnostics")
            for key in ("tp_10", "tr_10", "tc_10", "ndcg_fc_10"):
                assert f"{KEYS[key].title} {details['temporal']['overall'][key]:.4f}" in chart["attrs"]["aria-label"]
            panel = page.by_id["temporal"]
            temporal = details["temporal"]
            assert f"{temporal['fully_covered_queries']} of {temporal['queries']}" in panel
            assert "offline oracle" in panel  # the synthetic release's labels
        if SUBTRACKS[subtrack].judged:
            generation = details["generation"]
            for metric in ("rouge_l", "meteor"):
                chart = page.chart(f"{KEYS[metric].title} by turn depth")
                for group, figures in generation["per_depth"].items():
                    assert f"{group} {figures[metric]:.4f} ({figures['turns']} turns)" in chart["attrs"]["aria-label"]
            assert "The judge did not run for this submission" in page.by_id["judge"]


def test_the_judged_pages_chart_the_judge_mean_per_domain_and_depth(judged):
    for name in ("2b-judged-development", "2c-judged-evaluation"):
        sample, _, details = judged[name]
        page = read(sample.path)
        generation = details["generation"]
        chart = page.chart(f"{KEYS[JUDGE_MEAN].title} per domain")
        for domain, figures in generation["per_domain"].items():
            assert f"{domain} {figures[JUDGE_MEAN]:.4f} ({figures['turns']} turns)" in chart["attrs"]["aria-label"]
        page.chart(f"{KEYS[JUDGE_MEAN].title} by turn depth")


def test_label_source_names_frozen_labels_and_the_qrels_fallback():
    frozen = {"temporal": {"source": "frozen", "source_description": "frozen temporal labels of the reference data",
                           "labels": {"content_hash": "abc123"}, "overall": {}}}  # fmt: skip
    fallback = {"temporal": {"source": "oracle", "oracle": {"periods_file": None}, "overall": {}}}
    assert "frozen labels (content hash abc123)" in Page(detailed_results.render(subtrack="1a", phase=DEV, details=frozen)).by_id["temporal"]
    assert "qrels fallback" in Page(detailed_results.render(subtrack="1a", phase=DEV, details=fallback)).by_id["temporal"]
    unlabelled = copy.deepcopy(frozen)
    unlabelled["temporal"]["unlabelled_top10"] = {"documents": 40, "unlabelled": 7, "share": 0.175, "queries_with_unlabelled": 3}
    text = Page(detailed_results.render(subtrack="1a", phase=DEV, details=unlabelled)).by_id["temporal"]
    assert "7 of 40 distinct top-10 documents (in 3 queries) have no temporal label" in text


# ---------------------------------------------------------------------------------------------
# The charts themselves, by hand


def test_bar_lengths_the_mean_line_and_an_undefined_bar():
    svg = bar_chart("t", [Bar("a", 0.5, 3), Bar("b", None, 2), Bar("c", 1.0, 1)], mean=0.25, count_word="queries")
    page = Page(f"<html><body><main>{svg}</main></body></html>")
    chart = page.svgs[0]
    left = float(chart["rects"][0]["x"])
    span = charts.WIDTH - left - 58
    widths = [float(r["width"]) for r in chart["rects"]]
    assert widths == pytest.approx([span * 0.5, span * 1.0], abs=0.06)  # no bar for the undefined one
    mean_line = [ln for ln in chart["lines"] if ln.get("stroke") == charts.MEAN][0]
    assert float(mean_line["x1"]) == pytest.approx(left + span * 0.25, abs=0.06)
    assert "undefined" in chart["texts"] and "0.5000" in chart["texts"] and "1.0000" in chart["texts"]
    assert chart["attrs"]["aria-label"] == "t: a 0.5000 (3 queries); b undefined (2 queries); c 1.0000 (1 queries); overall 0.2500"
    assert "3 queries" in chart["texts"]


def test_values_outside_0_1_are_drawn_clamped_but_written_as_they_are():
    chart = Page(bar_chart("t", [Bar("a", 1.5), Bar("b", -0.5)])).svgs[0]
    left = float(chart["rects"][0]["x"])
    assert [float(r["width"]) for r in chart["rects"]] == pytest.approx([charts.WIDTH - left - 58, 0.0], abs=0.06)
    assert "1.5000" in chart["texts"] and "-0.5000" in chart["texts"]


def test_the_depth_curve_breaks_at_an_undefined_point():
    svg = depth_curve("d", [Point("T1", 0.2, 4), Point("T2", None, 0), Point("T3", 0.4, 3), Point("T4", 0.5, 2)])
    chart = Page(svg).svgs[0]
    assert len(chart["circles"]) == 3
    assert len(chart["polylines"]) == 1 and len(chart["polylines"][0]["points"].split()) == 2  # T3 - T4 only
    ys = [float(c["cy"]) for c in chart["circles"]]
    bottom, plot = 22 + 150, 150
    assert ys == pytest.approx([bottom - plot * 0.2, bottom - plot * 0.4, bottom - plot * 0.5], abs=0.06)
    assert "T2 undefined (0 turns)" in chart["attrs"]["aria-label"] and "4 turns" in chart["texts"]


def test_number_formats_four_decimals_and_refuses_non_numbers():
    assert number(0.123456) == "0.1235" and number(1) == "1.0000"
    assert number(None) == number(float("nan")) == number(True) == number("0.5") == "—"


# ---------------------------------------------------------------------------------------------
# Escaping, counts, refusal, row limit, reference data


HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)><i>x</i>"


def test_participant_text_is_escaped_everywhere(program_pages):
    scores, details = output_of(program_pages["2c-development"])
    details = copy.deepcopy(details)
    details["submission"] = {"run_file": HOSTILE + ".txt", "answers_file": HOSTILE, "ignored": [HOSTILE]}
    details["per_unit"][0]["unit"] = HOSTILE
    details["generation"]["per_turn"][0]["turn"] = HOSTILE
    details["per_domain"][HOSTILE] = dict(next(iter(details["per_domain"].values())))
    details["counts"][HOSTILE] = 1
    absent = {k: HOSTILE for k in details["absent_scores"]}
    text = detailed_results.render(subtrack="2c", phase=DEV, scores=scores, details=details, absent=absent,
                                   messages=[HOSTILE, "run.txt:3: warning: " + HOSTILE])  # fmt: skip
    page = Page(text)
    assert_sound(page)  # no script, img or i element, no event handler
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert page.visible_text().count(HOSTILE) >= 8  # read back as text: shown, not interpreted
    refused = Page(detailed_results.render(subtrack=None, phase={"name": HOSTILE}, messages=[HOSTILE], failed=True))
    assert_sound(refused)
    assert HOSTILE in refused.by_id["refusal"] and refused.visible_text().count(HOSTILE) == 2  # message, phase


def test_every_count_the_scorers_write_is_explained(program_pages):
    for subtrack in SUBTRACK_IDS:
        sample = program_pages[f"{subtrack}-development"]
        _, details = output_of(sample)
        page = read(sample.path)
        groups = [details.get("counts") or {}]
        generation = details.get("generation") or {}
        groups += [generation.get("answers") or {}, generation.get("evidence") or {}]
        names = [k for g in groups for k, v in g.items() if isinstance(v, int) and not isinstance(v, bool)]
        assert names
        for name in names:
            assert name in page_sections.COUNT_MEANINGS, f"{subtrack}: count {name} has no meaning"
            assert page_sections.COUNT_MEANINGS[name] in page.by_id["handling"]


def test_a_count_that_needs_fixing_is_marked(program_pages, tmp_path):
    reference_dir = program_pages["2a-development"].path.parents[3] / "reference" / "2a"
    run = (SAMPLES / "2a" / "run.txt").read_text()
    first = run.splitlines()[0].split()
    extra = f"{first[0]} Q0 no-such-document 1 99 x\n" + " ".join(first) + "\n"
    (tmp_path / "run.txt").write_text(run + extra)
    result = score_submission(Reference.read(reference_dir), tmp_path / "run.txt")
    assert result.details["counts"]["unknown_doc_ids"] == 1 and result.details["counts"]["duplicate_doc_ids"] == 1
    text = detailed_results.render(subtrack="2a", phase=DEV, scores=result.scores, details=result.details,
                                   messages=result.problems.lines())  # fmt: skip
    marked = re.findall(r"<code>(\w+)</code>(?:(?!</tr>).)*<td class='n problem'>(\d+)</td>", text)
    assert dict(marked) == {"unknown_doc_ids": "1", "duplicate_doc_ids": "1"}
    assert "no-such-document" in Page(text).by_id["warnings"]


def test_a_refusal_page_has_the_errors_what_to_do_and_nothing_else():
    errors = ["run.txt:1: error: rank 'a' is not an integer", "run.txt:7: error: 5 fields, expected 6"]
    page = Page(detailed_results.render(subtrack="2a", phase=DEV, messages=errors, failed=True))
    assert_sound(page)
    assert all(e in page.by_id["refusal"] for e in errors)
    assert "What to do" in page.by_id["refusal"] and "reteco validate --ref ref/2a" in page.by_id["refusal"]
    assert set(page.by_id) == {"refusal"} and not page.svgs and "withheld" not in page.source


def test_long_per_topic_tables_are_cut_and_boxed(program_pages):
    scores, details = output_of(program_pages["2a-development"])
    text = detailed_results.render(subtrack="2a", phase=DEV, scores=scores, details=details, max_rows=5)
    section = text[text.index("id='per-topic'"):]
    assert "(the first 5 of 51; all are in details.json)" in section
    assert section.count("<tr>") == 5 + 1  # five rows and the header
    assert "<div class='box tall'>" in section and ".box.tall{max-height:" in text and ".box{overflow:auto" in text


def test_no_reference_data_on_any_page(program_pages, judged):
    reference_root = program_pages["1a-development"].path.parents[3] / "reference"
    pages = {name: p.path.read_text() for name, p in program_pages.items()}
    pages |= {name: p.path.read_text() for name, (p, _, _) in judged.items()}
    for subtrack in SUBTRACK_IDS:
        reference = Reference.read(reference_root / subtrack)
        gold = {j.doc_id for j in reference.judgments if j.relevance > 0}
        answers, passages = set(), set()
        turns = reference_root / subtrack / "turns.jsonl"
        if turns.exists():
            for line in turns.read_text().splitlines():
                record = json.loads(line)
                answers.add(record["answer"])
                gold |= set(record.get("gold_doc_ids") or ())
        store = reference_root / subtrack / "passages.sqlite"
        if store.exists():  # read with sqlite3 itself, not the code under test
            with contextlib.closing(sqlite3.connect(store)) as conn:
                passages = {row[0] for row in conn.execute("SELECT text FROM passages")}
            assert passages, subtrack
        assert gold
        for name, text in pages.items():
            if not name.startswith(subtrack):
                continue
            # 2c pages may show a participant's own doc ids, never in a list here: none is listed.
            assert not [g for g in gold if g in text], name
            assert not [a for a in answers if len(a) > 15 and a in text], name
            # A passage's opening (80 characters) is enough to count as shown.
            assert not [t for t in passages if len(t) > 15 and t[:80] in text], name


def test_the_page_reads_its_warnings_from_details_when_none_are_given(program_pages):
    scores, details = output_of(program_pages["2a-development"])
    details = copy.deepcopy(details) | {"warnings": ["run.txt: warning: a warning from details"]}
    page = Page(detailed_results.render(subtrack="2a", phase=DEV, scores=scores, details=details))
    assert "a warning from details" in page.by_id["warnings"]
    page = Page(detailed_results.render(subtrack="2a", phase=DEV, scores=scores, details=details, messages=[]))
    assert "warnings" not in page.by_id


def test_a_benchmark_outside_the_subtrack_table_and_a_missing_phase_still_make_a_page():
    """A graded benchmark (FactIR) has no row in reteco.subtracks; no phase record: withheld."""
    details = {"overall": {"ndcg_5": 0.5}, "per_domain": {"x": {"units": 3, "ndcg_5": 0.5}},
               "per_unit": [{"unit": "claim-17", "ndcg_5": 0.5}]}  # fmt: skip
    scores = {"ndcg_5": 0.5, "recall_5_support": 0.25, "not_finite": float("nan")}
    page = Page(detailed_results.render(subtrack="factir", phase={}, scores=scores, details=details))
    assert_sound(page)
    assert page.by_id["headline-value"] == "0.5000" and "Headline figure: ndcg_5" in page.by_id["headline"]
    assert "recall_5_support" in page.by_id["leaderboard"] and "not_finite" not in page.source
    assert "claim-17" not in page.source and page.source.count(detailed_results.WITHHELD) == 1
