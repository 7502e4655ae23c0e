"""``reteco judge-compare``: two judge configurations against the fake server, one table (issue 31,
item 2): signature, announced shutdown against the judged phases, the golden gate with its failing
tags, the expected phase's cost at the config's prices, seconds per judgment."""

from __future__ import annotations

import json

from support.fake_openai_server import TEST_KEY

from reteco.commands import main as reteco


def write_config(path, base_url, **settings):
    values = {"prompt_version": 3, "base_url": base_url, "max_retries": 0, "max_reasks": 1, "backoff_initial_s": 0.01,
              "abort_after_errors": 100000, **settings}
    path.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in values.items()), encoding="utf-8")
    return path


def test_two_configs_make_one_table(fake_openai, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    plan = write_config(tmp_path / "gpt-4o.yaml", fake_openai.base_url, model="gpt-4o-2024-08-06", temperature=0)
    successor = write_config(tmp_path / "judge.yaml", fake_openai.base_url, model="gpt-5.5-2026-04-23", temperature=None,
                             reasoning_effort="low", max_completion_tokens=4000,
                             price_per_million={"input": 1.0, "cached_input": 0.1, "output": 8.0})
    code = reteco(["judge-compare", str(plan), str(successor), "--out", str(tmp_path / "out"),
                   "--judge-cache", str(tmp_path / "cache"), "--no-progress", "--turns", "200", "--submissions", "2"])
    assert code == 0
    document = json.loads((tmp_path / "out" / "judge_compare.json").read_text())
    table = (tmp_path / "out" / "judge_compare.md").read_text()
    a, b = document["judges"]
    assert a["signature"] != b["signature"] and (a["model"], b["model"]) == ("gpt-4o-2024-08-06", "gpt-5.5-2026-04-23")
    # The plan's model leaves on 2027-01-14: before Evaluation ends and before Post-evaluation's open end.
    assert a["shutdown_date"] == "2027-01-14" and [p["judge_leaves_before_end"] for p in a["phases"]] == [True, True]
    assert b["shutdown_date"] is None and not any(p["judge_leaves_before_end"] for p in b["phases"])
    # The fake judge scores at random: both fail the gate, the failing tags named.
    for row in (a, b):
        assert row["gate"]["complete"] and row["gate"]["passed"] is False and row["gate"]["failing_tags"]
        assert row["judged_now"] == row["judgments"] > 0 and row["seconds_per_judgment"] > 0
    assert a["expected_phase_cost_usd"] is None and b["expected_phase_cost_usd"] > 0
    # At the golden run's reported usage (the fake server: 100 prompt + 20 completion tokens a call).
    # (the re-judged probes ask the same requests again, in a second cache: their usage counts once)
    assert 0 < b["golden_usage"]["calls"] <= b["judgments"] and a["expected_phase_cost_usd_measured"] is None
    per_call = (100 * 1.0 + 20 * 8.0) / 1e6
    assert b["expected_phase_cost_usd_measured"] == round(per_call * 200 * 5 * 2, 2)
    assert b["decoding"] == {"max_completion_tokens": 4000, "seed": 2027, "reasoning_effort": "low"}
    lines = table.splitlines()
    assert len([line for line in lines if line.startswith("| gpt-4o.yaml") or line.startswith("| judge.yaml")]) == 2
    assert "Evaluation (2027-01-31 23:59:59), Post-evaluation (no end)" in table and "none announced" in table
    assert f"${b['expected_phase_cost_usd']:,.2f}" in table and "no prices in the config" in table
    # Beside every pass or fail, what the gate can detect: golden v5's size and power by simulation,
    # as golden/v5/calibration.yaml states them (tests/judge/test_golden_v5.py re-simulates them).
    power = document["gate_power"]
    assert document["golden_version"] == 5 and power["calibration"]["golden_version"] == 5
    assert power["calibration"]["size"] >= 0.95 and min(power["calibration"]["power"].values()) >= 0.80
    assert "What the golden gate can detect: golden set v5's gate" in table
    assert f"in {power['calibration']['size']:.1%} of runs" in table
    assert "a true claim the passages do not support scored faithful (5): 95.5%" in table
    # Judged again: every verdict from the cache, no judgment timed.
    calls = fake_openai.chat_calls
    assert reteco(["judge-compare", str(plan), "--out", str(tmp_path / "again"), "--judge-cache",
                   str(tmp_path / "cache"), "--no-progress"]) == 0
    assert fake_openai.chat_calls == calls
    again = json.loads((tmp_path / "again" / "judge_compare.json").read_text())["judges"][0]
    assert again["judged_now"] == 0 and again["seconds_per_judgment"] is None and again["signature"] == a["signature"]


def test_human_set_column_shows_agreement_beside_the_ceiling(fake_openai, tmp_path, monkeypatch, capsys):
    """``--human-set mtrag FILE``: each judge also judges the human-rated set (a tiny file in MTRAG's
    format here); its row holds per dimension the judge's kappa beside the annotators' ceiling."""
    from support.mtrag_tiny import hand_kappa_quadratic, leave_one_out_pairs, tiny_set, write

    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    plan = write_config(tmp_path / "gpt-4o.yaml", fake_openai.base_url, model="gpt-4o-2024-08-06", temperature=0)
    human_set = write(tmp_path / "mtrag.json", tiny_set())
    code = reteco(["judge-compare", str(plan), "--out", str(tmp_path / "out"), "--judge-cache", str(tmp_path / "cache"),
                   "--no-progress", "--human-set", "mtrag", human_set, "--cluster", "task"])
    assert code == 0
    row = json.loads((tmp_path / "out" / "judge_compare.json").read_text())["judges"][0]
    block = row["human_set"]
    assert block["name"] == "mtrag" and block["complete"] and block["cluster"] == "task"
    assert set(block["dimensions"]) == {"faithfulness", "completeness", "relevance", "coherence"}
    # The tiny set's annotators grade (4, 4, 3), (3, 2, 3), (1, 2, 2) on every metric: each grade
    # against the others' median rounded half up gives the pairs below; quadratic kappa by hand.
    xs = [4, 4, 3, 3, 2, 3, 1, 2, 2] * 3
    ys = [4, 4, 4, 3, 3, 3, 2, 2, 2] * 3
    assert leave_one_out_pairs([[4, 4, 3], [3, 2, 3], [1, 2, 2]] * 3) == (xs, ys)
    for figures in block["dimensions"].values():
        assert abs(figures["ceiling_kappa"]["value"] - hand_kappa_quadratic(xs, ys)) < 1e-9
        assert figures["judge_kappa"]["value"] is None or -1 <= figures["judge_kappa"]["value"] <= 1
    table = (tmp_path / "out" / "judge_compare.md").read_text()
    assert "human set: kappa judge / ceiling" in table and "mtrag: faithfulness " in table
    assert f"/ {block['dimensions']['faithfulness']['ceiling_kappa']['value']:.2f}" in table
