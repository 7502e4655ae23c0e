"""One spelling for the judge cache on every command: ``--judge-cache``.

Every command that reads or writes the judge cache (``reteco.llm.cache``: the generation
judge's and the temporal labeller's requests and replies, one cache) takes ``--judge-cache
DIR``. The spellings some commands had before (``reteco judge --cache``, ``judge-meta`` and
``label-temporal --cache-dir``) still work, so no organizer's script breaks, but --help lists
only the one spelling, and using an old one says what it is now.
"""

from __future__ import annotations

import argparse
import json

import pytest
from support.fake_openai_server import TEST_KEY

from reteco.commands import COMMANDS, build_parser, main
from reteco.judge import JudgeItem, item_to_json
from reteco.llm.cache import CACHE_FILE

# Each command that uses the judge cache, the other arguments it needs to parse, and the
# spelling it had before --judge-cache (None: it always had --judge-cache).
JUDGE_CACHE_COMMANDS = {
    "judge": (["--items", "i.jsonl", "--out", "o.jsonl"], "--cache"),
    "judge-meta": (["--out", "o"], "--cache-dir"),
    "judge-compare": (["c.yaml", "--out", "o"], None),
    "label-temporal": (["--ref", "r", "--pool", "p"], "--cache-dir"),
    "label-relevance": (["--round", "r", "--pool", "p"], None),
    "score": (["--ref", "r", "--res", "s"], None),
    "human-sample": (["--ref", "r", "--n", "1", "--seed", "1", "--out", "o.csv"], None),
    "judge-submissions": (["--ref", "r", "--submissions", "s", "--out", "o"], None),
    "leaderboard": (["--ref", "r", "--submissions", "s", "--out", "o"], None),
}
# Caches that are not the judge's: the bundle builder's downloaded wheels (`bundle --cache`,
# `check-bundle --cache`), and human-sample's switch to answer from the judge cache alone.
OTHER_CACHE_OPTIONS = {"bundle": {"--cache"}, "check-bundle": {"--cache"}, "human-sample": {"--cache-only"}}


def _parsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser(list(COMMANDS))
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _listed_options(parser: argparse.ArgumentParser) -> set[str]:
    """The option strings --help shows."""
    return {s for a in parser._actions if a.help != argparse.SUPPRESS for s in a.option_strings}


@pytest.mark.parametrize("command", sorted(JUDGE_CACHE_COMMANDS))
def test_every_command_that_uses_the_judge_cache_takes_judge_cache(command, capsys):
    rest, _ = JUDGE_CACHE_COMMANDS[command]
    parser = build_parser([command])
    args = parser.parse_args([command, *rest, "--judge-cache", "the-cache"])
    assert str(args.judge_cache) == "the-cache"
    assert "--judge-cache" in _listed_options(_parsers()[command])


@pytest.mark.parametrize("command", sorted(c for c, (_, old) in JUDGE_CACHE_COMMANDS.items() if old))
def test_the_former_spelling_still_parses_the_same_and_says_what_it_is_now(command, capsys):
    rest, old = JUDGE_CACHE_COMMANDS[command]
    new = build_parser([command]).parse_args([command, *rest, "--judge-cache", "the-cache"])
    capsys.readouterr()
    former = build_parser([command]).parse_args([command, *rest, old, "the-cache"])
    assert former == new
    assert f"reteco {command}: note: {old} is now --judge-cache (the old spelling still works)" in capsys.readouterr().err


@pytest.mark.parametrize("command", sorted(c for c, (_, old) in JUDGE_CACHE_COMMANDS.items() if old))
def test_help_lists_one_spelling_and_names_the_former(command, capsys):
    _, old = JUDGE_CACHE_COMMANDS[command]
    assert old not in _listed_options(_parsers()[command])
    assert main([command, "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--judge-cache DIR" in text and f"; formerly {old})" in text


def test_no_command_lists_another_spelling_of_a_cache():
    for command, parser in _parsers().items():
        caches = {s for s in _listed_options(parser) if "cache" in s}
        expected = OTHER_CACHE_OPTIONS.get(command, set()) | ({"--judge-cache"} if command in JUDGE_CACHE_COMMANDS
                                                              else set())
        assert caches == expected, command


def test_reteco_judge_writes_its_cache_where_judge_cache_says(fake_openai, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("RETECO_CACHE_DIR", str(tmp_path / "default"))  # must stay unused
    items = tmp_path / "items.jsonl"
    item = JudgeItem("law/1_turn_1", "relevance", "question", "", "answer", (("d1", "text"),), "reference")
    items.write_text(json.dumps(item_to_json(item)) + "\n", encoding="utf-8")
    code = main(["judge", "--items", str(items), "--out", str(tmp_path / "out.jsonl"), "--judge-cache",
                 str(tmp_path / "mine"), "--no-progress"])
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "mine" / CACHE_FILE).is_file() and not (tmp_path / "default").exists()
    assert fake_openai.chat_calls == 1


# The judge's configuration: --judge-config on every command that takes one (score, bundle,
# judge-submissions ... always had it); `judge` and `judge-report` had --config before.
JUDGE_CONFIG_FORMER = {
    "judge": ["--items", "i.jsonl", "--out", "o.jsonl"],
    "judge-report": ["--out", "o"],
}


@pytest.mark.parametrize("command", sorted(JUDGE_CONFIG_FORMER))
def test_judge_config_is_one_spelling_and_config_still_parses(command, capsys):
    rest = JUDGE_CONFIG_FORMER[command]
    new = build_parser([command]).parse_args([command, *rest, "--judge-config", "j.yaml"])
    assert str(new.judge_config) == "j.yaml"
    capsys.readouterr()
    assert build_parser([command]).parse_args([command, *rest, "--config", "j.yaml"]) == new
    assert f"reteco {command}: note: --config is now --judge-config (the old spelling still works)" in capsys.readouterr().err
    listed = _listed_options(_parsers()[command])
    assert "--judge-config" in listed and "--config" not in listed


def test_no_command_lists_another_spelling_of_the_judge_config():
    # judge-submissions' --second-judge-config is another judge's configuration (issue 19), not a
    # spelling of this one.
    second = {"judge-submissions": {"--second-judge-config"}}
    for command, parser in _parsers().items():
        assert not {s for s in _listed_options(parser) if "config" in s} - {"--judge-config"} - second.get(command, set()), \
            command


def test_the_log_names_the_cache_and_where_it_came_from(tmp_path, monkeypatch):
    """Issue 25: judge-submissions said "cache: the default cache" though RETECO_CACHE_DIR was set.
    The line names the folder and its source: the option, the variable, XDG or the home default."""
    from reteco.commands.judge_options import describe_judge_cache

    monkeypatch.delenv("RETECO_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert describe_judge_cache(tmp_path / "mine") == f"{tmp_path / 'mine'} (--judge-cache)"
    assert describe_judge_cache(None) == (f"{tmp_path / 'home' / '.cache' / 'reteco' / 'judge'} "
                                          "(the default, under the home folder)")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert describe_judge_cache(None) == f"{tmp_path / 'xdg' / 'reteco' / 'judge'} (under $XDG_CACHE_HOME)"
    monkeypatch.setenv("RETECO_CACHE_DIR", str(tmp_path / "set"))
    assert describe_judge_cache(None) == f"{tmp_path / 'set'} ($RETECO_CACHE_DIR)"
