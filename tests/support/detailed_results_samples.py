"""Test helper: detailed results pages of the starting kit's samples, as participants get them.

``scoring_program_pages``: the Codabench scoring program run on every sample submission in the
Development and Evaluation phases (and one refused run), through
``reteco.workbench.commands.screenshots.build_pages``. ``judged_pages``: 2b and 2c scored with the judge
and written by ``reteco.outputs.results.write_results`` (as the scoring program writes them), the
judge a deterministic fake on 127.0.0.1 (``fake_openai_server``) that answers an invalid score to
some faithfulness prompts, so the page's judge panel has valid and invalid counts to show.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import os
import threading
from pathlib import Path

from reteco.commands.demo import SAMPLES
from reteco.formats.reference import Reference
from reteco.judge import load_judge_config
from reteco.outputs import results
from reteco.outputs.charts import number
from reteco.scoring.submission import score_submission
from reteco.subtracks import JUDGE_MEAN, SUBTRACKS
from reteco.workbench.codabench.bundle import competition
from reteco.workbench.commands.screenshots import PHASE_KEYS, SamplePage, build_pages
from support.fake_openai_server import FakeOpenAI, asks_injection_flag, judgment, user_text

KEY_ENV = "RETECO_TEST_PAGE_JUDGE_KEY"
BERTSCORE_ENV = ("RETECO_BERTSCORE_MODEL", "RETECO_BERTSCORE_LAYERS")


def scoring_program_pages(work: Path) -> dict[str, SamplePage]:
    """``{"1a-development": page, ..., "2a-refused": page}``, written by the scoring program.

    BERTScore is left unconfigured, as on a machine without its model: its key is absent.
    """
    saved = {name: os.environ.pop(name, None) for name in BERTSCORE_ENV}
    try:
        return {page.name: page for page in build_pages(work)}
    finally:
        os.environ.update({k: v for k, v in saved.items() if v is not None})


def fake_judge(body: dict):
    """A score 1..5 from a hash of the prompt; an out-of-range 9 (invalid) for the first
    faithfulness prompt (one turn in 51: under the 2% bound, so faithfulness is still reported
    and its invalid count is not 0)."""
    text = user_text(body)
    digest = int(hashlib.sha256(text.encode()).hexdigest(), 16)
    with _FIRST_FAITHFULNESS_LOCK:
        if "for faithfulness" in text and not _FIRST_FAITHFULNESS:
            _FIRST_FAITHFULNESS.append(text)
    injection = False if asks_injection_flag(body) else None  # the reply schema of the prompt version
    if _FIRST_FAITHFULNESS[:1] == [text]:  # the first faithfulness prompt, now or on a later ask
        return judgment(9, "out of range", injection=injection)
    return judgment(1 + digest % 5, "fake rationale", injection=injection)


_FIRST_FAITHFULNESS: list[str] = []  # the one prompt answered invalid (the same on every ask)
_FIRST_FAITHFULNESS_LOCK = threading.Lock()


def judged_pages(work: Path, reference_root: Path) -> dict[str, tuple[SamplePage, dict, dict]]:
    """``{"2b-judged-development": (page, scores, details), ...}`` for 2b and 2c in both phases."""
    server = FakeOpenAI()
    server.judge = fake_judge
    server.start()
    saved = {name: os.environ.pop(name, None) for name in (KEY_ENV, *BERTSCORE_ENV)}
    os.environ[KEY_ENV] = "test-page-key-0123456789"
    phases = {p.key: p for p in competition.PHASES}
    out = {}
    try:
        config = dataclasses.replace(
            load_judge_config(), base_url=server.base_url, api_key_env=KEY_ENV, max_retries=0, max_reasks=0, concurrency=8
        )
        for subtrack in ("2b", "2c"):
            reference = Reference.read(reference_root / subtrack)
            result = score_submission(reference, SAMPLES / subtrack, judge_config=config, cache_dir=work / "judge-cache")
            assert result.details["generation"]["judge"]["ran"], "the fake judge did not run"
            for phase_key in PHASE_KEYS:
                phase = competition.phase_record(phases[phase_key], subtrack)
                name = f"{subtrack}-judged-{phase_key}"
                # As the scoring program writes them (on a copy: write_results adds to the details it writes).
                results.write_results(work / name, dataclasses.replace(result, details=copy.deepcopy(result.details)),
                                      subtrack, phase)  # fmt: skip
                page = SamplePage(name, subtrack, phase_key, work / name / results.DETAILED_RESULTS,
                                  number(result.scores[SUBTRACKS[subtrack].official or JUDGE_MEAN]))  # fmt: skip
                out[name] = (page, *output_of(page))
    finally:
        server.stop()
        os.environ.pop(KEY_ENV, None)
        os.environ.update({k: v for k, v in saved.items() if v is not None})
    return out


def output_of(page: SamplePage) -> tuple[dict, dict]:
    """scores.json and details.json beside a page the scoring program wrote."""
    folder = page.path.parent
    scores = json.loads((folder / "scores.json").read_text(encoding="utf-8")) if (folder / "scores.json").exists() else {}
    details = json.loads((folder / "details.json").read_text(encoding="utf-8")) if (folder / "details.json").exists() else {}
    return scores, details
