"""The five-dimension LLM judge of sub-tracks 2b and 2c.

One focused prompt per dimension (``prompts/v<N>/``, frozen by a manifest), any
OpenAI-compatible Chat Completions endpoint through the openai SDK, strict json_schema
replies, bounded concurrency, retries and re-asks, and a persistent SQLite cache that is
also the audit trail. See ``runner`` for how each fault ends and ``cache`` for what is kept.

    config = load_judge_config()              # the packaged judge.yaml
    ok, why = judge_available(config)         # no key: write no judge numbers, say why
    outcomes = run_judge(items, config)       # one JudgeOutcome per JudgeItem, same order
"""

from reteco.judge.config import JudgeConfig, judge_available, load_judge_config
from reteco.judge.items import (
    DIMENSIONS,
    JudgeItem,
    JudgeOutcome,
    item_from_json,
    item_to_json,
    outcome_to_json,
    summarize_outcomes,
)
from reteco.llm.cache import JudgeCacheError, default_cache_dir

# The runner imports the openai SDK (~0.7 s); retrieval scoring and every other command reach
# this package without needing it, so the runner's names load on first use (PEP 562).
_RUNNER_NAMES = ("JudgeNotAvailable", "build_request", "run_judge")


def __getattr__(name: str):
    if name in _RUNNER_NAMES:
        from reteco.judge import runner

        return getattr(runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "DIMENSIONS",
    "JudgeCacheError",
    "JudgeConfig",
    "JudgeItem",
    "JudgeNotAvailable",
    "JudgeOutcome",
    "build_request",
    "default_cache_dir",
    "item_from_json",
    "item_to_json",
    "judge_available",
    "load_judge_config",
    "outcome_to_json",
    "run_judge",
    "summarize_outcomes",
]
