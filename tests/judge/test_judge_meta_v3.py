"""``reteco judge-meta`` on golden set v3 against the fake OpenAI server: played by each failing
policy of issue 18 (the simulated judges' verdicts, answered per request), it exits 1 and stderr
names the failing dimension and tag; with the intended grades it exits 0. And ``--calibrate``."""

from __future__ import annotations

import dataclasses
import random
import re

import pytest
from support.fake_openai_server import first_user_text, graded_judge

from reteco.judge import build_request, load_judge_config
from reteco.judge.prompts import load_prompt_set
from reteco.problems import EXIT_INPUT, InputError
from reteco.workbench.judge_audit.golden import load_golden_set
from reteco.workbench.judge_audit.meta_contrasts import probe_items
from reteco.workbench.judge_audit.simulated_judges import simulated_judges

# The fake judge answers from a table keyed by the request's first user message, built with
# prompt version 3, the version golden set v3 is graded for (the meta_v3 fixture runs judge-meta on
# it; the packaged judge is on version 4, graded by golden set v4): under v3's
# layout that message ends with the dimension's rubric, so each (case, dimension) has its own key.

# policy -> what stderr must name (dimension and tag, or the probe)
POLICIES = {
    "abstention-always-1": "correctness, tag abstention-justified: order",
    "abstention-always-5": "completeness, tag abstention-unjustified: order",
    "fabricated-on-unanswerable-5": "faithfulness, tag unanswerable-fabricated: order",
    "true-unsupported-5": "faithfulness, tag true-but-unsupported: order",
    "faithfulness-correctness-swapped": "correctness, tag true-but-unsupported: hold",
    "keyword-injection-regex": "injection flags, tag injection: false_flag_share",
    "reference-bow-recall": "completeness, tag abstention-unjustified: order",
    "halo": "faithfulness, tag off-topic-but-faithful: hold",
    "length-only": "faithfulness, tag abstention-justified: order",
    "constant-1": "correctness, tag abstention-justified: order",
    "constant-5": "correctness, tag abstention-unjustified: order",
    "random": "correctness: exact_share",
    "pm1-half": "correctness: exact_share",
    "verbosity-biased": "probe verbosity: rise_share",
}


@pytest.fixture(scope="module")
def cases():
    return load_golden_set(3)


def policy_table(cases, name: str) -> dict[str, tuple[int, bool]]:
    """First user message of every request judge-meta sends (cases and probes) -> the simulated
    judge's (score, flag); a text asked twice (a re-judged case, or a 2b and a 2c case whose
    relevance request is the same) gets one verdict."""
    config = v3_config()
    judge = {j.name: j for j in simulated_judges(cases)}[name]
    rng = random.Random(0)
    table: dict[str, tuple[int, bool]] = {}

    def add(item, verdict):
        text = build_request(item, config)["messages"][1]["content"]
        table.setdefault(text, verdict)  # one text, one verdict: a random judge's first draw

    for c in cases:
        add(c.item, judge.verdict(c, rng, None))
    for p in probe_items(cases):
        if p.item != p.case.item:
            add(p.item, judge.verdict(p.case, rng, p.kind))
    return table


@pytest.fixture
def meta_v3(meta_run):
    """``meta_run`` (tests/judge/conftest.py) on golden set v3."""
    return lambda capsys, *extra: meta_run(capsys, "--golden-version", "3", *extra, prompt_version=3)


def v3_config():
    """The packaged judge config on prompt version 3, the version golden set v3 is graded for."""
    return dataclasses.replace(load_judge_config(), prompt_version=3, prompts=load_prompt_set(3))


@pytest.mark.slow
def test_the_intended_grades_pass_with_every_tag_and_probe_reported(fake_openai, meta_v3, cases, capsys, tmp_path):
    fake_openai.judge = graded_judge(policy_table(cases, "intended"))
    code, report, err = meta_v3(capsys)
    assert code == 0, err
    assert report["passed"] is True and report["failures"] == []
    assert len(report["per_tag"]) == 14 and all(report["per_tag"][t] for t in report["per_tag"])
    probes = report["probes"]
    assert probes["rejudging"]["identical_share"] == 1 and probes["passage_order"]["change_share"] == 0
    assert probes["abstention_policy"]["justified"]["share"] == 1 and probes["verbosity"]["rise_share"] == 0
    # every distinct request asked once (relevance and coherence do not show passages, so a 2b
    # and a 2c series' base answer make one request); the re-judged ones once more, through the
    # second cache
    config = v3_config()
    probes = probe_items(cases)

    def distinct(items):
        return len({build_request(i, config)["messages"][1]["content"] for i in items})

    first = distinct([c.item for c in cases] + [p.item for p in probes if p.kind != "rejudging"])
    assert fake_openai.chat_calls == first + distinct([p.item for p in probes if p.kind == "rejudging"])
    assert (tmp_path / "cache" / "rejudge").is_dir()
    assert "graded for prompt version 3" not in err  # the judge is on the version the set is graded for
    assert re.search(r"^tag abstention-justified +correctness 1\.000  completeness 1\.000 .* faithfulness 1\.000$", err, re.M)
    md = (tmp_path / "out0" / "judge_meta.md").read_text()
    assert "| abstention-justified | correctness | 1.000 (5/5) |" in md and "- re-judging: identical verdicts 1.000" in md


@pytest.mark.parametrize("name", sorted(POLICIES))
@pytest.mark.slow
def test_each_failing_policy_exits_1_naming_the_dimension_and_tag(fake_openai, meta_v3, cases, capsys, name):
    fake_openai.judge = graded_judge(policy_table(cases, name))
    code, report, err = meta_v3(capsys)
    assert code == EXIT_INPUT and report["passed"] is False
    assert "judge-meta: FAILED, below threshold:" in err
    assert any(line.strip().startswith(POLICIES[name]) for line in err.splitlines()), err


@pytest.mark.slow
def test_an_unstable_judge_fails_the_rejudging_probe(fake_openai, meta_v3, cases, capsys):
    # The second verdict on a re-judged case differs: a server that answers each text the
    # intended grade the first time and one lower (or higher) the second.
    table = policy_table(cases, "intended")
    seen: dict[str, int] = {}
    graded = graded_judge(table)

    def reply(body):
        text = first_user_text(body)
        seen[text] = seen.get(text, 0) + 1
        if seen[text] == 1 or text not in table:
            return graded(body)
        score, flag = table[text]
        return graded_judge({text: (score - 1 if score > 1 else 2, flag)})(body)

    fake_openai.judge = reply
    code, report, err = meta_v3(capsys)
    assert code == EXIT_INPUT and "probe rejudging: identical_share 0.000 < 0.7" in err


def test_calibrate_prints_the_gates_failure_rate_per_simulated_judge(judge_meta_cli, capsys):
    code = judge_meta_cli("--calibrate", "--runs", "2", "--golden-version", "3")
    out = capsys.readouterr().out
    assert code == 0
    rows = {line.split("|")[1].strip(): line for line in out.splitlines()[2:]}
    assert "| pass | 1 | 0.000 |" in rows["intended"] and "| fail | 1 | 1.000 |" in rows["abstention-always-1"]
    assert "| fail | 2 | 1.000 |" in rows["pm1-half"]
    # What the per-tag checks add: golden v2's per-dimension averages alone, on the same cases,
    # pass the judges issue 18 found passing v2 (the second figure).
    for name in ("abstention-always-1", "abstention-always-5", "fabricated-on-unanswerable-5", "true-unsupported-5"):
        assert "| fail | 1 | 1.000 | 0.000 |" in rows[name], rows[name]


def test_calibrate_needs_a_set_with_tags_and_out_is_required_otherwise(judge_meta_cli):
    with pytest.raises(InputError, match="version 3 or later"):
        judge_meta_cli("--calibrate", "--golden-version", "2")
    with pytest.raises(InputError, match="--out is required"):
        judge_meta_cli("--golden-version", "3")
