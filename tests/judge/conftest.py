"""Fixtures of the judge's tests: ``meta_run`` runs ``reteco judge-meta`` against the fake server."""

from __future__ import annotations

import argparse
import json

import pytest

from reteco.judge import load_judge_config
from reteco.workbench.commands.judge_meta import add_judge_meta_parser

KEY_ENV = "RETECO_TEST_JUDGE_META_KEY"


def reteco_judge_meta(*argv: str) -> int:
    """``reteco judge-meta`` with these arguments (its parser alone): the exit code."""
    parser = argparse.ArgumentParser(prog="reteco")
    add_judge_meta_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["judge-meta", *argv])
    return args.func(args)


@pytest.fixture(name="judge_meta_cli")
def judge_meta_cli_fixture():
    """``reteco_judge_meta``, for the tests that run it without the server (``--calibrate``)."""
    return reteco_judge_meta


@pytest.fixture
def meta_run(fake_openai, monkeypatch, tmp_path):
    """Runs ``reteco judge-meta`` (golden set v2 unless ``--golden-version`` is given) with a
    config file pointed at the fake server, on the packaged prompt version (the tests' fake judge
    keys its verdicts by the requests that version builds), and one cache folder per test;
    returns (exit code, JSON report, stderr)."""
    monkeypatch.setenv(KEY_ENV, "test-key-0123456789")
    config = tmp_path / "judge.yaml"
    runs = iter(range(100))

    def run(capsys, *extra, prompt_version: int | None = None):
        out = tmp_path / f"out{next(runs)}"
        version = () if "--golden-version" in extra else ("--golden-version", "2")
        config.write_text(
            f"prompt_version: {prompt_version or load_judge_config().prompt_version}\nmodel: fake-judge\nbase_url: {fake_openai.base_url}\n"
            f"api_key_env: {KEY_ENV}\n"
            "max_retries: 0\nmax_reasks: 1\nbackoff_initial_s: 0.01\nabort_after_errors: 1000\n",
            encoding="utf-8",
        )
        code = reteco_judge_meta("--out", str(out), "--judge-config", str(config), "--cache-dir",
                                 str(tmp_path / "cache"), "--no-progress", *version, *extra)
        report = json.loads((out / "judge_meta.json").read_text()) if (out / "judge_meta.json").exists() else None
        return code, report, capsys.readouterr().err

    return run
