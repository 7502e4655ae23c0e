"""``reteco judge-meta --human-set mtrag FILE`` (issue 33, point 3): MTRAG's human evaluations read as
published, judged against the fake server, and the judge's agreement beside the annotators' ceiling.

The ceiling is checked against a hand computation from the file's raw JSON (this module's own
loops, sharing no code with reteco): Krippendorff's ordinal alpha from a coincidence matrix built
by hand, and the leave-one-out quadratic-weighted kappa from its count table, also against
scikit-learn. The half of MTRAG's file is read from ``../shared`` (skipped with a message without
it); a tiny hand-written file in MTRAG's format covers the rest without it.
"""

from __future__ import annotations

import copy
import json
from collections import defaultdict
from statistics import mean

import pytest
from sklearn.metrics import cohen_kappa_score
from support.fake_openai_server import fake_judge, user_text
from support.mtrag_tiny import METRICS, hand_kappa_quadratic, leave_one_out_pairs, tiny_set, write
from support.paths import SHARED

from reteco.commands import main as reteco
from reteco.judge import load_judge_config
from reteco.judge.items import JudgeOutcome
from reteco.workbench.judge_audit.human_set_mtrag import human_set_agreement, judge_items, read_mtrag

HALF = SHARED / "data" / "mtrag_human" / "reference_subset_with_human_evaluations.half.json"
needs_half = pytest.mark.skipif(not HALF.is_file(), reason=f"MTRAG's human-rated half is not in ../shared ({HALF.name})")
KEY_ENV = "RETECO_TEST_HUMAN_SET_KEY"
#: The judge's 1-5 grade on MTRAG's 1-4 scale, written here from the documented map (5 -> 4, 4 -> 3,
#: 3 and 2 -> 2, 1 -> 1), not imported from reteco.
ON_MTRAG_SCALE = {1: 1, 2: 2, 3: 2, 4: 3, 5: 4}


@pytest.fixture
def run_human_set(fake_openai, monkeypatch, tmp_path):
    """Runs ``reteco judge-meta --human-set mtrag FILE`` against the fake server with one cache per
    test; returns (exit code, JSON document or None, stdout, stderr)."""
    monkeypatch.setenv(KEY_ENV, "test-key-0123456789")
    config = tmp_path / "judge.yaml"
    config.write_text(f"prompt_version: {load_judge_config().prompt_version}\nmodel: fake-judge\n"
                      f"base_url: {fake_openai.base_url}\napi_key_env: {KEY_ENV}\nmax_retries: 0\nmax_reasks: 1\n"
                      "backoff_initial_s: 0.01\nabort_after_errors: 1000\nconcurrency: 32\n", encoding="utf-8")
    runs = iter(range(100))

    def run(capsys, file, *extra):
        out = tmp_path / f"out{next(runs)}"
        code = reteco(["judge-meta", "--human-set", "mtrag", str(file), "--out", str(out), "--judge-config",
                       str(config), "--judge-cache", str(tmp_path / "cache"), "--no-progress", *extra])
        path = out / "human_set_mtrag.json"
        captured = capsys.readouterr()
        return code, json.loads(path.read_text()) if path.exists() else None, captured.out, captured.err

    return run


# --- hand computations from the raw JSON (no reteco code) ---------------------------------------

def raw_grades(path) -> dict[str, list[list[int]]]:
    """RETECO dimension -> per evaluation the list of its annotators' grades 1..4."""
    doc = json.loads(open(path, encoding="utf-8").read())
    return {dim: [[int(r["value"]) for r in e["annotations"][metric].values()] for e in doc["evaluations"]]
            for metric, dim in METRICS.items()}


def hand_alpha_ordinal(units: list[list[int]]) -> float:
    """Krippendorff (2011), "Computing Krippendorff's alpha-reliability": coincidences o_ck =
    sum over units of (pairs of values c, k in the unit) / (m_u - 1), n_c = sum_k o_ck; ordinal
    delta^2_ck = (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2; alpha = 1 - (n - 1) sum o_ck d_ck /
    sum_c sum_k n_c n_k d_ck."""
    values = [1, 2, 3, 4]
    o = {(c, k): 0.0 for c in values for k in values}
    for unit in units:
        m = len(unit)
        if m < 2:
            continue
        for i in range(m):
            for j in range(m):
                if i != j:
                    o[(unit[i], unit[j])] += 1.0 / (m - 1)
    n_c = {c: sum(o[(c, k)] for k in values) for c in values}
    n = sum(n_c.values())

    def delta(c, k):
        lo, hi = min(c, k), max(c, k)
        return (sum(n_c[g] for g in range(lo, hi + 1)) - (n_c[c] + n_c[k]) / 2) ** 2

    observed = sum(o[(c, k)] * delta(c, k) for c in values for k in values)
    expected = sum(n_c[c] * n_c[k] * delta(c, k) for c in values for k in values)
    return 1.0 - (n - 1) * observed / expected


# --- the half in ../shared ------------------------------------------------------------------------

@needs_half
def test_the_half_reads_as_published():
    hset = read_mtrag(HALF)
    counts = hset.counts()
    assert (counts["tasks"], counts["evaluations"], counts["systems"], counts["annotators"]) == (73, 219, 3, 7)
    assert counts["conversations"] == 10 and counts["passages"] == 145
    assert hset.systems == ("gpt-4o", "llama-3.1-405b-instruct", "reference")
    # 219 answers x 4 metrics, three annotators each but 47 (answer, metric) pairs rated by two.
    assert counts["ratings"] == 219 * 4 * 3 - 47
    # Each answer of the half's three systems is judged on the four mapped dimensions, never correctness.
    items = judge_items(hset, load_judge_config().prompts.dimension_names)
    assert len(items) == 219 * 4 and "correctness" not in {i.dimension for i in items}


@needs_half
@pytest.mark.slow  # 876 judgments through the fake server, twice, and the bootstrap of the whole half
def test_judge_meta_human_set_reports_agreement_beside_the_hand_computed_ceiling(run_human_set, fake_openai, capsys):
    code, doc, out, err = run_human_set(capsys, HALF)
    assert code == 0, err
    assert doc["counts"]["evaluations"] == 219 and doc["cluster"] == "conversation"
    assert [u["dimension"] for u in doc["unmatched"]] == ["correctness"]
    grades = raw_grades(HALF)
    for dim, units in grades.items():
        block = doc["dimensions"][dim]
        assert block["n_items"] == 219  # the fake judge gives every answer a score
        ceiling = block["ceiling"]
        assert abs(ceiling["alpha_ordinal_humans"]["value"] - hand_alpha_ordinal(units)) < 1e-9
        xs, ys = leave_one_out_pairs(units)
        assert ceiling["n_pairs"] == len(xs)
        assert abs(ceiling["kappa_quadratic"]["value"] - hand_kappa_quadratic(xs, ys)) < 1e-9
        assert abs(ceiling["kappa_quadratic"]["value"]
                   - cohen_kappa_score(xs, ys, labels=[1, 2, 3, 4, 5], weights="quadratic")) < 1e-9
        for figure in (ceiling["kappa_quadratic"], block["judge"]["kappa_quadratic"],
                       block["judge"]["alpha_ordinal_with_judge"]):
            assert figure["ci_low"] <= figure["value"] <= figure["ci_high"]
        order = block["system_order"]
        assert sorted(order["humans"]) == sorted(order["judge"]) == sorted(doc["systems"])
    # The table: every mapped dimension with its MTRAG metric, the ceiling, the note on three systems.
    assert "| relevance (appropriateness) |" in out and "| coherence (naturalness) |" in out
    assert "correctness | no counterpart" in out and "one time in six" in out
    # Run again: every verdict from the cache, none paid twice.
    calls = fake_openai.chat_calls
    assert calls == 219 * 4
    code, again, _, _ = run_human_set(capsys, HALF)
    assert code == 0 and fake_openai.chat_calls == calls
    assert again["judgments"]["faithfulness"]["cached"] == 219
    assert again["dimensions"] == doc["dimensions"]


# --- a tiny file in MTRAG's format (no ../shared needed) ------------------------------------------

def test_items_are_2b_items_with_the_mapping_stated(tmp_path):
    hset = read_mtrag(write(tmp_path / "tiny.json", tiny_set()))
    items = {(i.key, i.dimension): i for i in judge_items(hset, ("correctness", "completeness", "relevance",
                                                                  "coherence", "faithfulness"))}
    assert {d for _, d in items} == {"faithfulness", "completeness", "relevance", "coherence"}
    second = items[("mtrag/c1<::>2/sys-a", "faithfulness")]
    assert second.history == "User: Who photographs planes?\nAssistant: Aviation photographers."
    assert second.query == "From the ground?" and second.answer == "sys-a answers c1<::>2"
    assert [d for d, _ in second.evidence] == ["d1", "d2"] and second.gold_evidence == second.evidence
    # MTRAG's passage text starts with its title line (not repeated); a text without it gets it.
    assert second.evidence[0][1] == "Aviation photography\nAviation photography is taking images of aircraft."
    assert second.evidence[1][1] == "Ground\nGround-to-air photos are taken from the ground."
    assert second.reference_answer == "Yes, ground-to-air." and second.key_points == ()
    withheld = judge_items(hset, ("completeness",), reference_answer=False)
    assert len(withheld) == 9 and all(i.reference_answer == "" for i in withheld)
    assert items[("mtrag/c2<::>1/sys-b", "coherence")].evidence == ()


def test_tiny_set_end_to_end_with_the_ceiling_by_hand(run_human_set, fake_openai, capsys, tmp_path):
    path = write(tmp_path / "tiny.json", tiny_set())
    code, doc, out, err = run_human_set(capsys, path, "--cluster", "task")
    assert code == 0, err
    assert doc["counts"] == {"tasks": 3, "conversations": 2, "evaluations": 9, "systems": 3, "annotators": 3,
                             "passages": 2, "ratings": 108}
    units = [[4, 4, 3], [3, 2, 3], [1, 2, 2]] * 3
    for dim in METRICS.values():
        ceiling = doc["dimensions"][dim]["ceiling"]
        assert abs(ceiling["alpha_ordinal_humans"]["value"] - hand_alpha_ordinal(units)) < 1e-9
        assert abs(ceiling["kappa_quadratic"]["value"] - hand_kappa_quadratic(*leave_one_out_pairs(units))) < 1e-9
        assert doc["dimensions"][dim]["system_order"]["humans"] == ["reference", "sys-a", "sys-b"]
    # The judge's grades on MTRAG's scale: its mean per system is the mean of the mapped verdicts.
    assert fake_openai.chat_calls == 9 * 4
    means = doc["dimensions"]["faithfulness"]["system_order"]["means"]
    assert set(means) == {"reference", "sys-a", "sys-b"} and all(1 <= m["judge_mean"] <= 4 for m in means.values())
    verdicts = defaultdict(list)  # system -> the fake judge's faithfulness grades, from the requests it answered
    for request in fake_openai.chat_requests:
        text = user_text(request.body)
        if "for faithfulness only" in text:
            (system,) = [s for s in means if f"{s} answers " in text]
            verdicts[system].append(json.loads(fake_judge(request.body).body["choices"][0]["message"]["content"])["score"])
    assert {s: len(v) for s, v in verdicts.items()} == {"reference": 3, "sys-a": 3, "sys-b": 3}
    for system, grades in verdicts.items():
        assert means[system]["judge_mean"] == pytest.approx(mean(ON_MTRAG_SCALE[g] for g in grades), abs=1e-12)
    assert doc["judge_to_human_scale"] == {"1": 1, "2": 2, "3": 2, "4": 3, "5": 4}
    assert "clusters: tasks" in out


@pytest.mark.parametrize("edit, message, line", [
    (lambda d: d.pop("evaluations"), "the top-level object has no list 'evaluations'", 1),
    (lambda d: d["evaluations"][4]["annotations"]["faithfulness"]["a2"].update(value="5"),
     "the faithfulness of annotator 'a2' is '5', not one of", None),
    (lambda d: d["evaluations"][2].update(task_id="c9<::>1"), "the task is not among the tasks", None),
    (lambda d: d["tasks"][1]["input"].append({"speaker": "agent", "text": "x"}),
     "the last turn of input must be the user's", None),
    (lambda d: d["evaluations"].append(copy.deepcopy(d["evaluations"][0])), "has a second evaluation of system", None),
    (lambda d: d["tasks"][0]["contexts"].append({"document_id": "d7"}), "context 'd7' is not among the documents", None),
    (lambda d: d["evaluations"][1]["annotations"].pop("naturalness"), "no annotations of the human metric", None),
    (lambda d: d["metrics"][0].update(values=[{"value": "1", "numeric_value": 1}]), "not on the 4-point scale", None),
])
def test_a_malformed_file_is_exit_1_at_its_line(tmp_path, capsys, edit, message, line):
    doc = tiny_set()
    edit(doc)
    path = write(tmp_path / "bad.json", doc)
    code = reteco(["judge-meta", "--human-set", "mtrag", path, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert f"{path}:" in err and message in err, err
    located = int(err.split(f"{path}:")[1].split(":")[0])
    if line is not None:
        assert located == line
    else:  # the line of the offending object's opening brace (or of a rating inside it)
        assert json.dumps(doc, indent=1).splitlines()[located - 1].strip().endswith("{")
    assert not (tmp_path / "out").exists()


def test_not_json_and_unknown_set_are_exit_1(tmp_path, capsys):
    path = tmp_path / "broken.json"
    path.write_text('{\n "tasks": [\n  {"task_id": }\n ]\n}\n', encoding="utf-8")
    assert reteco(["judge-meta", "--human-set", "mtrag", str(path), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert f"{path}:3: error: not valid JSON" in err and "Traceback" not in err
    assert reteco(["judge-meta", "--human-set", "summeval", str(path), "--out", str(tmp_path / "o")]) == 1
    assert "unknown human-rated set 'summeval'" in capsys.readouterr().err


@needs_half
def test_the_ceiling_on_the_half_is_the_hand_computed_one_whatever_the_judge():
    """The ceiling depends on the annotators alone: verdicts made up here (no server), a short bootstrap."""
    hset = read_mtrag(HALF)
    dimensions = ("faithfulness", "completeness", "relevance", "coherence")
    outcomes = [JudgeOutcome(item=item, score=1 + n % 5, status="ok", rationale="", cached=True, attempts=1,
                             system_fingerprint=None)
                for n, item in enumerate(judge_items(hset, dimensions))]
    doc = human_set_agreement(hset, outcomes, "made-up@0123456789abcdef", dimensions, resamples=20)
    for dim, units in raw_grades(HALF).items():
        ceiling = doc["dimensions"][dim]["ceiling"]
        assert abs(ceiling["alpha_ordinal_humans"]["value"] - hand_alpha_ordinal(units)) < 1e-9
        assert abs(ceiling["kappa_quadratic"]["value"] - hand_kappa_quadratic(*leave_one_out_pairs(units))) < 1e-9
        # The made-up judge's grades are 1..5 cycling: on MTRAG's scale 1, 2, 2, 3, 4.
        assert doc["dimensions"][dim]["n_items"] == 219
        # Its mean per system: the mean of its mapped grades on the system's answers.
        mapped = defaultdict(list)
        for o in outcomes:
            if o.item.dimension == dim:
                mapped[o.item.key.rsplit("/", 1)[1]].append(ON_MTRAG_SCALE[o.score])
        means = doc["dimensions"][dim]["system_order"]["means"]
        assert set(means) == set(mapped) == set(hset.systems)
        for system, grades in mapped.items():
            assert means[system]["judge_mean"] == pytest.approx(mean(grades), abs=1e-12)


@pytest.mark.slow  # a whole judge-meta golden run for the gate the report quotes
def test_the_judge_report_quotes_the_human_set_beside_the_ceiling_and_the_golden_gate(run_human_set, fake_openai,
                                                                                       capsys, tmp_path):
    path = write(tmp_path / "tiny.json", tiny_set())
    code, doc, _, err = run_human_set(capsys, path)
    assert code == 0, err
    human_set = next(tmp_path.glob("out*/human_set_mtrag.json"))
    config = tmp_path / "judge.yaml"
    assert reteco(["judge-meta", "--golden-version", "2", "--out", str(tmp_path / "meta"), "--judge-config",
                   str(config), "--judge-cache", str(tmp_path / "cache"), "--no-progress"]) in (0, 1)
    capsys.readouterr()
    out = tmp_path / "report"
    assert reteco(["judge-report", "--out", str(out), "--judge-config", str(config), "--human-set", str(human_set),
                   "--golden", str(tmp_path / "meta" / "judge_meta.json")]) == 0
    assert "warning" not in capsys.readouterr().err
    report = json.loads((out / "judge-report.json").read_text())
    h = report["human_set"]
    assert h["same_judge"] is True and h["judge_signature"] == doc["judge"]["signature"]
    assert h["golden"]["golden_version"] == 2 and h["unmatched"] == ["correctness"]
    for d, block in doc["dimensions"].items():
        assert h["dimensions"][d]["ceiling_kappa_quadratic"]["value"] == block["ceiling"]["kappa_quadratic"]["value"]
        assert h["dimensions"][d]["judge_kappa_quadratic"]["value"] == block["judge"]["kappa_quadratic"]["value"]
    md = (out / "judge-report.md").read_text()
    assert "## Agreement on a public human-rated set" in md and "Golden set v2: the gate " in md
    assert "| relevance (appropriateness, approximate) | 9 |" in md and "kappa ceiling" in md
    # No path of this machine in the report: the set is named as given relative to here, or by its name.
    assert str(tmp_path) not in md
