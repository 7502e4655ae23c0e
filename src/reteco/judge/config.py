"""The judge's configuration: a flat YAML file (the packaged ``judge.yaml`` by default).

A ``JudgeConfig`` is an ``LLMConfig`` (``reteco.llm.config``: endpoint, model, decoding,
concurrency, retries) plus the judge's prompt version, loaded and verified against its frozen
manifest, and the ``signature`` that names who judged. It never holds the API key itself.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from reteco.judge.prompts import PACKAGED_PROMPTS, PromptSet, load_prompt_set, rendered_hash
from reteco.llm.config import LLMConfig, endpoint_available, read_config_file, relative_to
from reteco.llm.prompt_files import PromptIntegrityError
from reteco.problems import InputError

PACKAGED_CONFIG = Path(__file__).resolve().parent / "judge.yaml"
#: The evaluation plan's GPT-4o as a named configuration, for comparison (``reteco judge-compare``).
PLAN_GPT4O_CONFIG = Path(__file__).resolve().parent / "gpt-4o.yaml"


@dataclass(frozen=True, kw_only=True)
class JudgeConfig(LLMConfig):
    """Who judges (prompt version, model, decoding: the ``signature``) and how requests are made.

    Build it with ``load_judge_config``; ``dataclasses.replace`` gives a variant (tests, the
    CLI's overrides) and keeps the same prompts.
    """

    prompt_version: int
    prompts: PromptSet = field(repr=False, compare=False)

    def problems(self) -> list[str]:
        problems = []
        if self.prompts.version != self.prompt_version:
            problems.append(f"prompts are version {self.prompts.version}, prompt_version is {self.prompt_version}")
        return problems + super().problems()

    @cached_property
    def _prompts_hash(self) -> str:
        # Rendering the sample messages is the costly part of the signature: done once.
        return rendered_hash(self.prompts)

    @property
    def signature(self) -> str:
        """Who judged: a short sha256 over the prompt files (rubric anchors and schema included),
        the rendering of the messages, the model id, the decoding and re-ask settings (a reasoning
        model's ``reasoning_effort`` included), how the
        reply's format is asked (``response_format``) and the endpoint (``LLMConfig.endpoint``:
        the public URL, no credentials). Another server answering under the same model name is
        another judge; the model it reports is recorded with each verdict
        (``JudgeOutcome.reported_model``)."""
        payload = {
            "prompt_version": self.prompt_version,
            "prompt_files": dict(self.prompts.file_hashes),
            "rendered": self._prompts_hash,
            "model": self.model,
            # 0 and 0.0 are one temperature (a YAML "0" is an int, the default a float).
            "temperature": None if self.temperature is None else float(self.temperature),
            "seed": self.seed,
            "max_completion_tokens": self.max_completion_tokens,
            "token_limit_param": self.token_limit_param,
            "max_reasks": self.max_reasks,
            "response_format": self.response_format,
            "endpoint": self.endpoint(),
        }
        # Added only when set, so that every signature made without it stays what it was.
        if self.reasoning_effort is not None:
            payload["reasoning_effort"] = self.reasoning_effort
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]

    def describe(self) -> dict[str, Any]:
        """What a report discloses about the judge: never the key, nor credentials in the URL."""
        return {"signature": self.signature, "prompt_version": self.prompt_version, **super().describe()}


# The file's keys: every field but the loaded prompts, the file's own name and the run-time
# batch_queue_only (judge-submissions' first pass), and prompts_dir.
_FIELDS = [f.name for f in dataclasses.fields(JudgeConfig) if f.name not in ("prompts", "source", "batch_queue_only")]
_FIELDS = ["prompt_version", "model", *(f for f in _FIELDS if f not in ("prompt_version", "model"))]


def load_judge_config(path: Path | None = None) -> JudgeConfig:
    """Read a judge config (None: the packaged ``judge.yaml``) and load its verified prompts.

    Every key of the file must be a JudgeConfig field or ``prompts_dir`` (a prompts folder
    with its own manifest, default the packaged one); relative paths are relative to the
    file. Raises InputError (file named) on unknown keys, bad values or prompt files that
    differ from their frozen manifest.
    """
    path = Path(path) if path is not None else PACKAGED_CONFIG
    where = str(path)
    raw = read_config_file(path, [*_FIELDS, "prompts_dir"])
    for key in ("prompt_version", "model"):
        if raw.get(key) is None:
            raise InputError(f"{key} is required", where)
    values = {k: v for k, v in raw.items() if k != "prompts_dir"}
    prompts_root = relative_to(path, raw["prompts_dir"]) if raw.get("prompts_dir") else PACKAGED_PROMPTS
    if not isinstance(raw["prompt_version"], int) or isinstance(raw["prompt_version"], bool):
        raise InputError("prompt_version must be an integer", where)
    try:
        prompts = load_prompt_set(raw["prompt_version"], prompts_root)
    except PromptIntegrityError as exc:
        raise InputError(str(exc), where) from None
    try:
        return JudgeConfig(prompts=prompts, source=where, **values)
    except (TypeError, ValueError) as exc:
        raise InputError(str(exc), where) from None


def judge_available(config: JudgeConfig) -> tuple[bool, str]:
    """Whether the judge can run (``reteco.llm.config.endpoint_available``), in the judge's words."""
    ok, why = endpoint_available(config)
    return ok, f"judge {why}" if ok else why
