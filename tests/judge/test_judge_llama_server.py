"""``reteco judge`` against a real OpenAI-compatible server: llama.cpp's ``llama-server`` with a
tiny random GGUF model, on a free 127.0.0.1 port (``../shared/tools/llama.cpp``; see its README).

Random weights say nothing sensible, but the server's grammar-constrained decoding makes every
reply match the strict json_schema, so this exercises the protocol of a real server: the
request as reteco sends it, the preflight, parsing, caching and provenance (the reported model
is the ``--alias``).
"""

from __future__ import annotations

import argparse
import json
import sqlite3

import pytest
from support.fake_openai_server import TEST_KEY
from support.llama_server import needs_llama_server, running_llama_server

from reteco.judge import JudgeItem, item_to_json
from reteco.llm.cache import CACHE_FILE
from reteco.workbench.commands.judge import add_judge_parser

ALIAS = "tiny-judge"

pytestmark = needs_llama_server


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    with running_llama_server(ALIAS, tmp_path_factory.mktemp("llama") / "server.log") as url:
        yield url


def reteco_judge(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="reteco")
    add_judge_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["judge", *argv])
    return args.func(args)


ITEMS = [
    JudgeItem("law/1_turn_1", "relevance", "What is the rule?", "", "It has two parts.", (), ""),
    JudgeItem("law/1_turn_1", "faithfulness", "What is the rule?", "", "It has two parts.",
              (("law_doc_1", "The rule has two parts."),), ""),
    JudgeItem("law/2_turn_2", "coherence", "And the second?", "Q: What is the rule?\nA: It has two parts.",
              "The second part concerns timing.", (), ""),
]


@pytest.mark.slow
def test_reteco_judge_against_llama_server(llama_server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RETECO_LLAMA_KEY", TEST_KEY)
    config = tmp_path / "llama.yaml"
    # The packaged settings (strict json_schema, max_completion_tokens, seed, temperature 0), as
    # llama-server accepts them; a short cap keeps the random model's replies quick.
    config.write_text(f"prompt_version: 1\nmodel: gpt-4o-2024-08-06\nbase_url: {llama_server}\n"
                      "api_key_env: RETECO_LLAMA_KEY\nmax_completion_tokens: 60\nconcurrency: 2\n", encoding="utf-8")
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(item_to_json(i)) + "\n" for i in ITEMS), encoding="utf-8")
    cache = tmp_path / "cache"
    out = tmp_path / "out.jsonl"
    code = reteco_judge("--items", str(items), "--out", str(out), "--judge-config", str(config), "--cache", str(cache),
                        "--no-progress")
    err = capsys.readouterr().err
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == len(ITEMS)
    # Every reply is parsed: a verdict (the grammar keeps it in the schema), never a transport error.
    assert all(x["status"] in ("ok", "invalid") for x in lines), lines
    assert code == 0, err
    ok = [x for x in lines if x["status"] == "ok"]
    assert ok and all(x["score"] in (1, 2, 3, 4, 5) for x in ok)
    # Provenance: the server's alias, its fingerprint and the endpoint, with a warning.
    assert {x["reported_model"] for x in lines} == {ALIAS}
    assert all(x["system_fingerprint"] for x in lines) and {x["endpoint"] for x in lines} == {llama_server}
    assert f"reported: {ALIAS} x {len(ITEMS)}" in err and "(preflight passed)" in err
    assert "reported another model than the configured gpt-4o-2024-08-06" in err
    with sqlite3.connect(cache / CACHE_FILE) as conn:
        vias = [row[0] for row in conn.execute("SELECT via FROM calls ORDER BY id")]
        stored = conn.execute("SELECT COUNT(*) FROM judgments").fetchone()[0]
        probe = json.loads(conn.execute("SELECT r.request_json FROM requests r JOIN calls c "
                                        "ON c.request_hash = r.request_hash WHERE c.via = 'preflight'").fetchone()[0])
    assert vias[0] == "preflight" and vias.count("preflight") == 1 and stored == len(ITEMS)
    assert probe["response_format"]["type"] == "json_schema" and probe["max_completion_tokens"] == 16
    # Run again: all from the cache, no request at all (no preflight either).
    again = tmp_path / "again.jsonl"
    assert reteco_judge("--items", str(items), "--out", str(again), "--judge-config", str(config), "--cache", str(cache),
                        "--no-progress") == 0
    second = [json.loads(line) for line in again.read_text().splitlines()]
    assert all(x["cached"] for x in second)
    assert [x["score"] for x in second] == [x["score"] for x in lines]
    assert "0 HTTP requests (preflight not needed)" in capsys.readouterr().err
