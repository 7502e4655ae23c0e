"""Fixtures shared across the test folders.

The fake OpenAI server (``fake_openai``, and ``server``, its name in the scoring-program tests),
the packaged judge config pointed at it (``judge_config``), and the synthetic release prepared
for the judged sub-tracks 2b and 2c once per module (``ref_root``). A folder's own fixtures
are in its conftest.py; a module's fixture of the same name wins over these.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from support.fake_openai_server import TEST_KEY, FakeOpenAI

from reteco.judge import load_judge_config
from reteco.judge.config import PLAN_GPT4O_CONFIG
from reteco.judge.prompts import load_prompt_set
from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import write_synthetic_release


@pytest.fixture(name="fake_openai")
def fake_openai_fixture():
    """A started FakeOpenAI; stopped after the test."""
    server = FakeOpenAI()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def server(fake_openai):
    """The started FakeOpenAI of ``fake_openai``, under the name the scoring-program tests use."""
    return fake_openai


@pytest.fixture(name="judge_config")
def judge_config_fixture(fake_openai, monkeypatch):
    """The plan's GPT-4o judge config (``gpt-4o.yaml``, packaged beside the default: temperature 0,
    no reasoning effort) on prompt version 1, pointed at the fake server, with test-sized waits.
    The reasoning-model default has its own tests (tests/judge/test_reasoning_judge.py).

    The transport, fault and batch tests script replies in version 1's reply schema
    ({"rationale", "score"}), so they stay on version 1 explicitly; the version-2 rubric has
    its own tests. The key is set in the environment (never in the config); backoff is a few
    milliseconds so retry tests are quick; a server's Retry-After is still honoured as sent.
    """
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    return dataclasses.replace(
        load_judge_config(PLAN_GPT4O_CONFIG), prompt_version=1, prompts=load_prompt_set(1), base_url=fake_openai.base_url,
        backoff_initial_s=0.01, backoff_max_s=0.05, timeout_s=5.0, max_retries=3, max_reasks=2,
    )


@pytest.fixture(scope="module")
def ref_root(tmp_path_factory) -> Path:
    """The synthetic release prepared (dev split) for the judged sub-tracks, 2b and 2c."""
    root = tmp_path_factory.mktemp("judged")
    release = write_synthetic_release(root / "release")
    prepare_release(release, "dev", root / "ref", subtracks=("2b", "2c"))
    return root / "ref"



@pytest.fixture(name="slow_judge_server")
def slow_judge_server_fixture():
    """Starts fake servers that answer after a latency: ``slow_judge_server(latency_s, judge=None)``
    returns a started ``FakeOpenAI`` (``judge``: its reply function); all are stopped after the test."""
    started: list[FakeOpenAI] = []

    def start(latency_s: float, judge=None) -> FakeOpenAI:
        server = FakeOpenAI(latency_s=latency_s)
        if judge is not None:
            server.judge = judge
        server.start()
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.stop()


@pytest.fixture(name="slow_random_server")
def slow_random_server_fixture(slow_judge_server):
    """A fake server answering at random after 0.1 s (``support.shared_cache.random_judge``):
    runs started together overlap, and a judgment paid twice shows."""
    from support.shared_cache import random_judge

    return slow_judge_server(0.1, random_judge)


# ranx, against which tests/api/test_other_tools_page.py checks every figure the Other tools page
# calls equal, is numba code: it runs here as the Python it is written in, not compiled. Its
# figures are the same (compared to 1e-9), its compilation is not what the test checks, and it
# cost minutes per test process: its typed containers compile anew in every process (numba caches
# none of that: 118 s to build one Qrels and one Run at load 7 on 2 cores, its functions' compiled
# cache already warm; 9 s in all without the compiler, its import included). Nothing else the
# tests run calls numba code (ppi-python's mean functions are numpy). NUMBA_DISABLE_JIT=0 in the
# environment runs ranx compiled.
os.environ.setdefault("NUMBA_DISABLE_JIT", "1")
