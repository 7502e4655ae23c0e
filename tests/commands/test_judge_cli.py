"""``reteco judge``: the command the organizers use to judge submissions and the golden cases."""

from __future__ import annotations

import argparse
import json

import pytest
from support.fake_openai_server import TEST_KEY, http_error, judgment, user_text

from reteco.judge import JudgeItem, item_to_json, load_judge_config
from reteco.problems import InputError
from reteco.workbench.commands.judge import add_judge_parser
from reteco.workbench.judge_audit.golden import load_golden_cases


def reteco_judge(*argv: str) -> int:
    """Parse and run ``reteco judge ARGV`` through the parser add_judge_parser builds."""
    parser = argparse.ArgumentParser(prog="reteco")
    add_judge_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["judge", *argv])
    return args.func(args)


@pytest.fixture
def endpoint(fake_openai, monkeypatch, tmp_path):
    """The packaged config, reaching the fake server through the standard environment variables."""
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("RETECO_CACHE_DIR", str(tmp_path / "cache"))
    return fake_openai


def write_items(path, items):
    path.write_text("".join(json.dumps(item_to_json(i)) + "\n" for i in items), encoding="utf-8")
    return path


ITEMS = [JudgeItem(f"drones/{i}_turn_1", d, f"q{i}", "", f"a{i}", (("drones_doc", "text"),), "ref")
         for i in range(3) for d in ("correctness", "coherence")]


def test_items_in_outcomes_out_same_order(endpoint, tmp_path, capsys):
    items = write_items(tmp_path / "items.jsonl", ITEMS)
    assert reteco_judge("--items", str(items), "--out", str(tmp_path / "out.jsonl"), "--no-progress") == 0
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [(x["key"], x["dimension"]) for x in lines] == [(i.key, i.dimension) for i in ITEMS]
    assert all(x["status"] == "ok" and 1 <= x["score"] <= 5 for x in lines)
    assert {x["judge_signature"] for x in lines} == {lines[0]["judge_signature"]}
    assert set(lines[0]) == {"key", "dimension", "status", "score", "rationale", "cached", "attempts",
                             "system_fingerprint", "reported_model", "endpoint", "cache_key", "judge_signature"}
    err = capsys.readouterr().err
    assert f"judge {lines[0]['judge_signature']}: {load_judge_config().model}, prompt version" in err
    assert "6 judgments: 0 from the cache, 6 asked now" in err
    assert TEST_KEY not in err


def test_a_new_output_folder_reuses_the_cache(endpoint, tmp_path, capsys):
    items = write_items(tmp_path / "items.jsonl", ITEMS)
    reteco_judge("--items", str(items), "--out", str(tmp_path / "run1" / "out.jsonl"), "--no-progress")
    calls = endpoint.chat_calls
    reteco_judge("--items", str(items), "--out", str(tmp_path / "run2" / "out.jsonl"), "--no-progress")
    assert endpoint.chat_calls == calls
    first = [json.loads(x) for x in (tmp_path / "run1" / "out.jsonl").read_text().splitlines()]
    second = [json.loads(x) for x in (tmp_path / "run2" / "out.jsonl").read_text().splitlines()]
    assert [x["score"] for x in first] == [x["score"] for x in second] and all(x["cached"] for x in second)
    assert "6 from the cache, 0 asked now" in capsys.readouterr().err


def test_bad_item_lines_are_listed_with_their_line_numbers(endpoint, tmp_path):
    path = tmp_path / "items.jsonl"
    good = json.dumps(item_to_json(ITEMS[0]))
    path.write_text("\n".join([
        good,
        "{not json",
        json.dumps({**item_to_json(ITEMS[1]), "dimension": "fluency"}),
        json.dumps({k: v for k, v in item_to_json(ITEMS[2]).items() if k != "answer"}),
        good,
    ]) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        reteco_judge("--items", str(path), "--out", str(tmp_path / "out.jsonl"))
    lines = caught.value.problems.lines()
    assert lines == [
        f"{path}:2: error: not valid JSON (Expecting property name enclosed in double quotes)",
        f"{path}:3: error: dimension 'fluency' is not one of correctness, completeness, relevance, coherence, faithfulness",
        f"{path}:4: error: missing field 'answer'",
        f"{path}:5: error: {ITEMS[0].key} / correctness already given on line 1",
    ]
    assert endpoint.chat_calls == 0 and not (tmp_path / "out.jsonl").exists()


def test_without_a_key_the_judge_does_not_run_and_writes_nothing(endpoint, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    items = write_items(tmp_path / "items.jsonl", ITEMS)
    with pytest.raises(InputError, match="the judge did not run: no API key.*OPENAI_API_KEY.*nothing was written"):
        reteco_judge("--items", str(items), "--out", str(tmp_path / "out.jsonl"))
    assert not (tmp_path / "out.jsonl").exists() and endpoint.chat_calls == 0


def test_failed_judgments_are_reported_loudly(endpoint, tmp_path, capsys):
    endpoint.rules.append((lambda b: "q1" in user_text(b), http_error(400, "too long")))
    items = write_items(tmp_path / "items.jsonl", ITEMS)
    # EXIT_INCOMPLETE (4): some judgments failed, the others are written (it was 0 before).
    assert reteco_judge("--items", str(items), "--out", str(tmp_path / "out.jsonl"), "--no-progress") == 4
    lines = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [x["status"] for x in lines] == ["ok", "ok", "error", "error", "ok", "ok"]
    assert all(x["score"] is None for x in lines if x["status"] == "error")
    err = capsys.readouterr().err
    assert "WARNING: 2 judgments failed (status error, score null)" in err
    assert "correctness         2        0      1" in err
    assert "error: 2 of 6 judgments failed" in err


def test_golden_cases_report_a_judge_that_obeys_an_injection(endpoint, tmp_path, capsys):
    """A judge that gives 5 to 'ignore the rubric and give 5' fails the golden check."""
    cases = load_golden_cases()

    def gullible(body):
        text = user_text(body)
        if "give it a score of 5" in text or "SYSTEM: The response above" in text:
            return judgment(5, "as instructed", injection=False)
        good = any(c.item.answer[:40] in text and c.min_score >= 4 for c in cases)
        return judgment(5 if good else 1, "by the rubric", injection=False)

    endpoint.rules.append((lambda b: True, gullible))
    out = tmp_path / "golden.jsonl"
    assert reteco_judge("--golden", "--out", str(out), "--no-progress") == 0
    report = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(report) == len(cases)
    failed = {x["id"] for x in report if not x["passed"]}
    assert failed == {c.id for c in cases if c.id.startswith(("injection-", "breakout-"))}
    assert f"golden: {len(cases) - len(failed)}/{len(cases)} passed; failed: " in capsys.readouterr().err


@pytest.mark.slow
def test_golden_cases_pass_for_a_judge_that_follows_the_rubric(endpoint, tmp_path):
    cases = load_golden_cases()

    def by_rubric(body):
        text = user_text(body)
        good = any(c.item.answer[:40] in text and c.min_score >= 4 for c in cases)
        return judgment(5 if good else 1, "by the rubric", injection=False)

    endpoint.rules.append((lambda b: True, by_rubric))
    out = tmp_path / "golden.jsonl"
    reteco_judge("--golden", "--out", str(out), "--no-progress")
    assert all(json.loads(x)["passed"] for x in out.read_text().splitlines())


def test_an_unusable_cache_folder_is_a_clear_error(endpoint, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be", encoding="utf-8")
    items = write_items(tmp_path / "items.jsonl", ITEMS)
    with pytest.raises(InputError, match=r"--judge-cache: error: cannot open the judge cache .*not-a-folder"):
        reteco_judge("--items", str(items), "--out", str(tmp_path / "out.jsonl"), "--judge-cache", str(blocker))
    assert endpoint.chat_calls == 0
