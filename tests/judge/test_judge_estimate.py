"""The estimate before anything is sent (``reteco.workbench.judge_audit.estimate``; issue 20 item 2): within 25%
of the tokens the fake server counts by the same documented rule (``count_tokens=True``: it counts
the prompts it receives and caches every prefix it saw), on the golden cases as 2b and 2c turns
and on synthetic submissions, for prompt versions 2 and 3."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest
from support.fake_openai_server import FakeOpenAI, asks_injection_flag, judgment
from support.golden_turns import every_dimension, golden_turns

from reteco.commands import main
from reteco.judge import JudgeItem, item_to_json, run_judge
from reteco.judge.prompts import load_prompt_set
from reteco.subtracks import DIMENSIONS
from reteco.workbench.judge_audit.estimate import estimate_judging

WORDS = "the passage states that answer covers bridge year opened because reference claims supported".split()


def wordy_judge(body):
    """Replies with rationales of 40-60 words, as a real judge writes them."""
    rng = random.Random(json.dumps(body["messages"])[-200:])
    rationale = " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 60)))
    return judgment(rng.randint(1, 5), rationale, injection=False if asks_injection_flag(body) else None)


def synthetic_submission(n: int = 12) -> list[JudgeItem]:
    rng = random.Random(7)
    items = []
    for t in range(n):
        passages = tuple((f"doc-{t}-{p}", " ".join(rng.choice(WORDS) for _ in range(rng.randint(60, 160))))
                         for p in range(5))
        answer = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 120)))
        items += [JudgeItem(f"law/{t}_turn_2", d, f"question {t}?", "Q: earlier?\nA: yes.", answer, passages,
                            "reference answer", passages[:2]) for d in DIMENSIONS]
    return items


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("source", ["golden-2b", "golden-2c", "synthetic"])
def test_the_estimate_is_within_25_percent_of_what_the_server_counts(judge_config, tmp_path, version, source):
    items = synthetic_submission() if source == "synthetic" else every_dimension(golden_turns(source[-2:])[:12])
    server = FakeOpenAI(count_tokens=True)
    server.judge = wordy_judge
    server.start()
    try:
        config = dataclasses.replace(judge_config, prompt_version=version, prompts=load_prompt_set(version),
                                     base_url=server.base_url, concurrency=1,
                                     price_per_million={"input": 2.5, "cached_input": 1.25, "output": 10.0})
        estimate = estimate_judging(items, config)
        assert server.chat_calls == 0  # nothing is sent for an estimate
        outcomes = run_judge(items, config, cache_dir=tmp_path, progress=False)
    finally:
        server.stop()
    assert all(o.status == "ok" for o in outcomes)
    reported = outcomes.stats.verdicts_usage
    assert estimate.calls == reported.calls
    for name, got, counted in (("input", estimate.input_tokens, reported.prompt_tokens),
                               ("cacheable", estimate.cacheable_tokens, reported.cached_tokens),
                               ("output", estimate.output_tokens, reported.completion_tokens)):
        assert abs(got - counted) <= 0.25 * counted, f"{name}: estimated {got}, the server counted {counted}"
    money = config.prices().money(reported)
    assert abs(estimate.money_usd - money) <= 0.25 * money


def test_reteco_judge_estimate_prints_the_figures_and_sends_nothing(fake_openai, judge_config, tmp_path, capsys,
                                                                    monkeypatch):
    items_file = tmp_path / "items.jsonl"
    items_file.write_text("".join(json.dumps(item_to_json(i)) + "\n" for i in synthetic_submission(2)))
    config_file = tmp_path / "judge.yaml"
    config_file.write_text(f"prompt_version: 3\nmodel: m\nbase_url: {fake_openai.base_url}\n"
                           "price_per_million: {input: 2.5, cached_input: 1.25, output: 10}\n", encoding="utf-8")
    code = main(["judge", "--items", str(items_file), "--judge-config", str(config_file), "--estimate"])
    out = capsys.readouterr().out
    assert code == 0 and fake_openai.all_chat_calls == 0
    assert "calls: 10 " in out and "input tokens:" in out and "money: $" in out and "characters per token" in out
    assert not (tmp_path / "out.jsonl").exists()
