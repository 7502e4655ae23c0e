"""The relevance round's blind validation (issue 34): the sheet for reviewers, its import, and the
figures of the round's report against a case worked by hand.

Four topics d/q1..d/q4; the qrels judge g1 and g2 relevant on each. The round's LLM labelled six
pooled pairs and, unannounced, the four known-relevant pairs (d/qN, g1). LLM / human labels:

    pair       LLM  human   gain at the threshold 2 (LLM / human)
    q1 h1       3     3     3 / 3
    q1 h2       2     1     2 / 0
    q2 h1       0     0     0 / 0
    q2 h2       1     2     0 / 2
    q3 h1       3     3     3 / 3
    q4 h1       0     1     0 / 0
    known: q1 g1 3, q2 g1 1, q3 g1 2, q4 g1 3 (LLM); 3, 3, 2, 1 (human)

Quadratic kappa on 0-3, x the LLM's, y the humans': observed mean (x - y)^2 = (0+1+0+1+0+1)/6 = 1/2;
expected (independent margins) = Var x + Var y + (mean x - mean y)^2 = 19/12 + 11/9 + 1/36 = 17/6;
kappa = 1 - (1/2)/(17/6) = 14/17. At the cut (>= 2): x = 110010, y = 100110: agreement 4/6,
chance 1/2 * 1/2 + 1/2 * 1/2 = 1/2, kappa = (2/3 - 1/2)/(1/2) = 1/3. Exact agreement 3/6.
Recall on the known pairs: LLM 3 of 4 (q2's g1 labelled 1), humans 3 of 4.

Systems, each ranking one document on one topic (the other topics score 0):
    A: q1 -> h2    B: q2 -> h2    C: q3 -> h1
nDCG@10 augmented with the sample's labels (the qrels' relevant at gain 3): one document at rank
1 gives gain / IDCG(topic), over 4 topics. With the LLM's labels: A 2/I(3,3,3,2), B 0,
C 3/I(3,3,3); with the humans': A 0, B 2/I(3,3,2), C 3/I(3,3,3). LLM ranking C > A > B, human
C > B > A: tau-b = (2 - 1)/3 = 1/3; tau_AP, positions from the LLM's ranking, correctness from the
humans': A (second) has C above it, right (1/1); B (third) has C and A above it, C right, A wrong
(1/2): 2/(3 - 1) (1 + 1/2) - 1 = 1/2.
"""

from __future__ import annotations

import csv
import io
import json
import math

import pytest
from support.intervals import walk_intervals

from reteco.commands import main
from reteco.formats.reference import Judgment, Reference, Topic
from reteco.formats.relevance_labels import RelevanceLabels, RelevanceRow, RoundQuery
from reteco.metrics.label_agreement import wilson_interval
from reteco.workbench.labels.relevance_review import VALIDATION_COLUMNS
from reteco.workbench.leaderboard import standings as lb
from reteco.workbench.leaderboard.round_html import html_validation
from reteco.workbench.leaderboard.round_validation import validation_section

L2 = math.log2
TOPICS = ("q1", "q2", "q3", "q4")
LABELS = {("q1", "h1"): (3, 3), ("q1", "h2"): (2, 1), ("q2", "h1"): (0, 0), ("q2", "h2"): (1, 2),
          ("q3", "h1"): (3, 3), ("q4", "h1"): (0, 1)}
KNOWN = {("q1", "g1"): (3, 3), ("q2", "g1"): (1, 3), ("q3", "g1"): (2, 2), ("q4", "g1"): (3, 1)}
RUNS = {"A": ("q1", "h2"), "B": ("q2", "h2"), "C": ("q3", "h1")}
RATIONALE = "LLM-RATIONALE-MARKER"


def idcg(*gains: int) -> float:
    return sum(g / L2(i + 2) for i, g in enumerate(sorted(gains, reverse=True)))


@pytest.fixture
def phase(tmp_path):
    topics = [Topic(f"d/{t}", "d", t, f"d/{t}", "", None) for t in TOPICS]
    manifest = {"subtrack": "1a", "benchmark": "reteco", "relevance": "binary", "cutoffs": [10],
                "official": "ndcg_10", "domains": ["d"]}
    reference = Reference(manifest, topics, [Judgment(f"d/{t}", g, 1) for t in TOPICS for g in ("g1", "g2")], None, None)
    paths = {}
    for name, (topic, doc) in RUNS.items():
        path = tmp_path / f"team{name}-run.txt"
        path.write_text(f"{topic} Q0 {doc} 1 10 run\n")
        paths[f"team{name}/run"] = path
    round_dir = tmp_path / "round"
    labels = RelevanceLabels.create(round_dir, [RoundQuery(f"d/{t}", f"question of {t}", {"time_frame": f"frame {t}"})
                                                for t in TOPICS], "test")
    pairs = {**LABELS, **KNOWN}
    labels.append([RelevanceRow(f"d/{t}", doc, llm, "llm", "fake-assessor", "2027-01-20T10:00:00Z",
                                "relevance-labels/v2", RATIONALE, judge={"signature": "s"})
                   for (t, doc), (llm, _) in pairs.items()], "test")
    pool = [{"query": f"d/{t}", "doc_id": doc, "query_text": f"question of {t}", "context": {"time_frame": f"frame {t}"},
             "passage": f"passage {doc} of {t}", **({"known_relevant": True} if (t, doc) in KNOWN else {})}
            for t, doc in pairs]
    (tmp_path / "pool.jsonl").write_text("".join(json.dumps(r) + "\n" for r in pool))
    return reference, round_dir, paths, tmp_path


def test_the_sheet_is_blind_and_the_report_equals_the_hand_worked_case(phase, capsys):
    reference, round_dir, paths, tmp = phase
    before = {p: p.read_bytes() for p in round_dir.rglob("*") if p.is_file()}
    everything = {p: p.read_bytes() for p in tmp.rglob("*") if p.is_file()}
    sheet = tmp / "out" / "validation.csv"
    assert main(["label-export", "--kind", "relevance", "--labels", str(round_dir), "--pool", str(tmp / "pool.jsonl"),
                 "--validation", "6", "--out", str(sheet)]) == 0
    assert "10 pairs to label blind" in capsys.readouterr().out
    # Every file the export wrote or changed: the sheet and the organizers' key; neither holds an LLM
    # label or rationale (the key: which item is which pair, and which pairs are known).
    changed = sorted(p for p in tmp.rglob("*") if p.is_file() and everything.get(p) != p.read_bytes())
    assert changed == sorted([round_dir / "validation" / "key.json", sheet])
    for path in changed:
        text = path.read_text(encoding="utf-8")
        assert RATIONALE not in text and "fake-assessor" not in text and '"relevance"' not in text
    # Every file written for the reviewers: no LLM label, no rationale, no sign of which pair is known.
    written = [p for p in (tmp / "out").rglob("*") if p.is_file()]
    assert written == [sheet]
    rows = list(csv.DictReader(io.StringIO(sheet.read_text(encoding="utf-8"))))
    assert tuple(rows[0]) == VALIDATION_COLUMNS and len(rows) == 10
    text = sheet.read_text(encoding="utf-8")
    assert RATIONALE not in text and "known" not in text.lower() and "llm" not in text.lower()
    assert all(r["relevance"] == "" for r in rows) and [r["item"] for r in rows] == [str(i) for i in range(1, 11)]
    # The known-relevant pairs are there (their passages), shuffled among the others.
    shown = {r["passage"] for r in rows}
    assert {f"passage {d} of {t}" for t, d in KNOWN} <= shown and len(shown) == 10
    assert all(r["time_frame"] == f"frame {r['query_text'].split()[-1]}" for r in rows)
    key = json.loads((round_dir / "validation" / "key.json").read_text())
    assert key["seed"] == 2027 and key["sample_size"] == 6 and key["known_relevant"] == 4
    assert {(e["query"], e["doc_id"]) for e in key["items"] if e["known_relevant"]} == {(f"d/{t}", d) for t, d in KNOWN}
    positions = [e["known_relevant"] for e in key["items"]]
    assert positions != sorted(positions) and positions != sorted(positions, reverse=True)
    # A second draw for the same round is refused.
    assert main(["label-export", "--kind", "relevance", "--labels", str(round_dir), "--pool", str(tmp / "pool.jsonl"),
                 "--validation", "6", "--out", str(tmp / "again.csv")]) == 1
    capsys.readouterr()

    # The reviewer labels the sheet; the import records them beside the round, whose files are unchanged.
    human = {(e["query"][2:], e["doc_id"]): e["item"] for e in key["items"]}
    by_item = {item: {**LABELS, **KNOWN}[pair][1] for pair, item in human.items()}
    for r in rows:
        r["relevance"] = str(by_item[int(r["item"])])
    with open(sheet, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=VALIDATION_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    assert main(["label-import", "--kind", "relevance", "--labels", str(round_dir), "--csv", str(sheet),
                 "--reviewer", "A. Reviewer", "--validation"]) == 0
    assert "10 labels by A. Reviewer" in capsys.readouterr().out
    assert all(before[p] == p.read_bytes() for p in before)
    # The same reviewer twice: refused, nothing written.
    assert main(["label-import", "--kind", "relevance", "--labels", str(round_dir), "--csv", str(sheet),
                 "--reviewer", "A. Reviewer", "--validation"]) == 1
    assert "has labelled this item already" in capsys.readouterr().err

    section = validation_section(reference, round_dir, paths, ["teamC/run", "teamA/run", "teamB/run"],
                                 lb.ScoringOptions(run_judge_now=False), resamples=500, seed=1)
    agreement = section["agreement"]
    assert agreement["pairs"] == 6 and agreement["exact"] == pytest.approx(3 / 6, abs=1e-12)
    assert agreement["kappa_quadratic"]["value"] == pytest.approx(14 / 17, abs=1e-12)
    assert agreement["kappa_binary"]["value"] == pytest.approx(1 / 3, abs=1e-12)
    assert walk_intervals(section) == 4  # the two kappas, the two recalls: each holds its estimate
    assert agreement["confusion"] == [[1, 1, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 2]]
    recall = section["recall_known"]
    assert (recall["llm"]["hits"], recall["llm"]["pairs"], recall["llm"]["value"]) == (3, 4, 0.75)
    assert (recall["llm"]["ci_low"], recall["llm"]["ci_high"]) == pytest.approx(wilson_interval(3, 4), abs=1e-12)
    assert recall["human"]["value"] == 0.75
    # Wilson's interval for 3 of 4, by its formula: (p + z^2/2n +- z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n).
    z = 1.959963984540054
    centre, half = (0.75 + z * z / 8) / (1 + z * z / 4), z * math.sqrt(0.75 * 0.25 / 4 + z * z / 64) / (1 + z * z / 4)
    assert wilson_interval(3, 4) == pytest.approx((centre - half, centre + half), abs=1e-12)
    ranks = section["rankings"]
    figures = {s["name"]: (s["llm"], s["human"]) for s in ranks["systems"]}
    assert figures["teamA/run"] == pytest.approx((2 / idcg(3, 3, 3, 2) / 4, 0.0), abs=1e-12)
    assert figures["teamB/run"] == pytest.approx((0.0, 2 / idcg(3, 3, 2) / 4), abs=1e-12)
    assert figures["teamC/run"] == pytest.approx((3 / idcg(3, 3, 3) / 4, 3 / idcg(3, 3, 3) / 4), abs=1e-12)
    assert ranks["kendall_tau_b"] == pytest.approx(1 / 3, abs=1e-12)
    assert ranks["tau_ap"] == pytest.approx(1 / 2, abs=1e-12)
    # The leaderboard page's paragraph.
    page = html_validation(section)
    assert "6 of 6 sampled pairs rated blind" in page and "weighted kappa 0-3 0.8235 [" in page
    assert "kappa at 2+ 0.3333 [" in page and "4 known-relevant pairs 0.7500 [" in page
    assert "tau-b 0.3333" in page and "tau_AP 0.5000" in page
