"""How an LLM is reached and asked: endpoint, model, decoding, concurrency, retries, batches.

``LLMConfig`` is what every LLM use shares (the generation judge, ``reteco.judge.config``, adds
its prompts and signature; the temporal labeller uses a judge configuration as it is). The
configuration never holds the API key itself, only where to read it (an environment variable
or a file), so a config object can be printed, logged or written to a report.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import yaml

from reteco.llm.usage import Prices, prices_of, prices_problems
from reteco.problems import InputError

DEFAULT_BASE_URL = "https://api.openai.com/v1"
TOKEN_LIMIT_PARAMS = ("max_completion_tokens", "max_tokens")
#: How the reply's JSON shape is asked for (``reteco.llm.compatibility.shape_request``):
#: ``json_schema`` strict (OpenAI, Azure, vLLM, llama.cpp's llama-server); ``json_object`` with
#: the schema written into the system message (llama-cpp-python's server, which refuses
#: ``json_schema``); ``none``: no ``response_format`` at all, the schema in the system message.
#: Whatever the mode, every reply is checked against the schema by the caller's validator.
RESPONSE_FORMATS = ("json_schema", "json_object", "none")
#: ``reasoning_effort`` values of a reasoning model's Chat Completions request, as the openai SDK
#: types them (``openai.types.shared.reasoning_effort.ReasoningEffort``); null sends none.
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")

# Keys shorter than this are placeholders (vLLM's "EMPTY", "sk-no-key"), not secrets: redacting
# them would mangle ordinary text, and leaking them reveals nothing.
MIN_SECRET_LENGTH = 8


@dataclass(frozen=True, kw_only=True)
class LLMConfig:
    """Which model is asked, with which decoding, and how requests are made (never the key).

    Keyword-only, so a user's configuration (``reteco.judge.config.JudgeConfig``) can add its
    own fields; ``dataclasses.replace`` gives a variant (tests, command-line overrides).
    """

    model: str
    temperature: float | None = 0.0
    seed: int | None = 2027
    max_completion_tokens: int = 400
    token_limit_param: str = "max_completion_tokens"
    # A reasoning model's effort (REASONING_EFFORTS), sent as ``reasoning_effort``; None sends
    # nothing (a model that is not a reasoning model refuses the parameter). A reasoning model
    # counts its reasoning tokens inside ``max_completion_tokens``: size the cap for both.
    reasoning_effort: str | None = None
    response_format: str = "json_schema"
    base_url: str | None = None
    base_url_env: str = "OPENAI_BASE_URL"
    api_key_env: str = "OPENAI_API_KEY"
    api_key_file: Path | None = None
    concurrency: int = 16
    timeout_s: float = 120.0
    max_retries: int = 6
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 60.0
    max_wait_s: float = 600.0
    max_reasks: int = 2
    abort_after_errors: int = 20
    use_batch_api: bool = False
    batch_poll_interval_s: float = 30.0
    batch_timeout_s: float = 90000.0
    batch_max_requests: int = 50000
    # Set by ``reteco judge-submissions`` for its first pass, never read from a file: the Batch
    # API's first asks are queued in the cache for the phase's one job (``reteco.llm.batch``)
    # instead of sent as a batch of this run. Not part of who judges.
    batch_queue_only: bool = field(default=False, compare=False)
    max_calls_per_run: int | None = None  # HTTP requests one run may make (None: no limit)
    max_tokens_per_run: int | None = None  # tokens one run may use (reteco.llm.calls; None: no limit)
    # Dollars per million tokens {input, cached_input, output} and the Batch API's factor on them
    # (reteco.llm.usage); None: reports give tokens only. Not part of who judges (the signature).
    price_per_million: Mapping[str, float] | None = field(default=None, compare=False)
    batch_price_factor: float = field(default=0.5, compare=False)
    source: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        problems = self.problems()
        if problems:
            raise ValueError("; ".join(problems))

    def problems(self) -> list[str]:
        """What is wrong with the values (empty when they are usable)."""
        problems = []
        if not self.model or not isinstance(self.model, str):
            problems.append("model must be a non-empty string")
        if self.token_limit_param not in TOKEN_LIMIT_PARAMS:
            problems.append(f"token_limit_param must be one of {', '.join(TOKEN_LIMIT_PARAMS)}")
        if self.reasoning_effort is not None and self.reasoning_effort not in REASONING_EFFORTS:
            problems.append(f"reasoning_effort must be one of {', '.join(REASONING_EFFORTS)} (or null to send none)")
        if self.response_format not in RESPONSE_FORMATS:
            problems.append(f"response_format must be one of {', '.join(RESPONSE_FORMATS)}")
        for name in ("max_calls_per_run", "max_tokens_per_run"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                problems.append(f"{name} must be an integer >= 0 (or null for no limit)")
        for name in ("max_completion_tokens", "concurrency", "batch_max_requests", "abort_after_errors"):
            if not (isinstance(getattr(self, name), int) and getattr(self, name) >= 1):
                problems.append(f"{name} must be a positive integer")
        for name in ("max_retries", "max_reasks"):
            if not (isinstance(getattr(self, name), int) and getattr(self, name) >= 0):
                problems.append(f"{name} must be an integer >= 0")
        for name in ("timeout_s", "backoff_initial_s", "backoff_max_s", "max_wait_s", "batch_poll_interval_s", "batch_timeout_s"):
            if not (isinstance(getattr(self, name), (int, float)) and getattr(self, name) >= 0):
                problems.append(f"{name} must be a number >= 0")
        if not isinstance(self.use_batch_api, bool):
            problems.append("use_batch_api must be true or false")
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int)):
            problems.append("seed must be an integer (or null)")
        if self.temperature is not None:
            if isinstance(self.temperature, bool) or not isinstance(self.temperature, (int, float)):
                problems.append("temperature must be a number (or null)")
            elif not 0 <= self.temperature <= 2:
                problems.append("temperature must be within 0..2 (or null to leave it to the server)")
        for name in ("base_url", "base_url_env", "api_key_env"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, str) and value):
                problems.append(f"{name} must be a non-empty string")
        if self.timeout_s == 0:
            problems.append("timeout_s must be > 0")
        return problems + prices_problems(self.price_per_million, self.batch_price_factor)

    def decoding(self) -> dict[str, Any]:
        """The request parameters of the decoding, as sent: the token cap under its parameter's
        name, then ``temperature``, ``seed`` and ``reasoning_effort`` only when set (null leaves a
        parameter to the server: OpenAI's reasoning models refuse any ``temperature`` but 1)."""
        out: dict[str, Any] = {self.token_limit_param: self.max_completion_tokens}
        for name in ("temperature", "seed", "reasoning_effort"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    def prices(self) -> Prices | None:
        """The configured prices (``reteco.llm.usage``), None when the config names none."""
        return prices_of(self.price_per_million, self.batch_price_factor)

    def resolved_base_url(self) -> str:
        """The endpoint: ``base_url``, else $``base_url_env``, else OpenAI's."""
        return self.base_url or os.environ.get(self.base_url_env) or DEFAULT_BASE_URL

    def endpoint(self) -> str:
        """The endpoint as it names who answered: the public URL (no credentials, query or
        fragment) without a trailing slash, so ``.../v1`` and ``.../v1/`` are one server. It is
        part of the judge's signature and of every cache key."""
        return public_url(self.resolved_base_url()).rstrip("/")

    def describe(self) -> dict[str, Any]:
        """What a report discloses about the model and how it was asked: never the key, nor
        credentials in the URL."""
        return {
            "model": self.model,
            "temperature": self.temperature,
            "seed": self.seed,
            "max_completion_tokens": self.max_completion_tokens,
            "token_limit_param": self.token_limit_param,
            "reasoning_effort": self.reasoning_effort,
            "response_format": "json_schema (strict)" if self.response_format == "json_schema" else (
                f"{self.response_format} (the schema written into the system message)"
            ),
            "endpoint": self.endpoint(),
            "max_retries": self.max_retries,
            "backoff_initial_s": self.backoff_initial_s,
            "backoff_max_s": self.backoff_max_s,
            "max_wait_s": self.max_wait_s,
            "max_reasks": self.max_reasks,
            "abort_after_errors": self.abort_after_errors,
            "use_batch_api": self.use_batch_api,
            "max_calls_per_run": self.max_calls_per_run,
            "max_tokens_per_run": self.max_tokens_per_run,
            "price_per_million": dict(self.price_per_million) if self.price_per_million else None,
            "batch_price_factor": self.batch_price_factor,
            "config": Path(self.source).name if self.source else "",  # a name: details.json is shown to participants
        }


def public_url(url: str) -> str:
    """``url`` without user info, query or fragment (where credentials could hide)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        return urlunsplit((parts.scheme, host, parts.path, "", ""))
    except ValueError:
        return "(unparsable URL)"


def read_config_file(path: Path, known: Sequence[str]) -> dict[str, Any]:
    """The mapping of a flat YAML config file whose keys must all be in ``known``; InputError
    (file named) when it cannot be read, is not a mapping, or has an unknown key. An
    ``api_key_file`` is made relative to the file."""
    where = str(path)
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read the judge config: {exc.strerror}", where) from None
    except yaml.YAMLError as exc:
        raise InputError(f"not valid YAML: {exc}", where) from None
    if not isinstance(raw, dict):
        raise InputError("the judge config must be a YAML mapping of keys to values", where)
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise InputError(f"unknown key(s) {', '.join(unknown)}; known keys: {', '.join(known)}", where)
    if raw.get("api_key_file") is not None:
        raw["api_key_file"] = relative_to(Path(path), raw["api_key_file"])
    return raw


def relative_to(config_path: Path, value: Any) -> Path:
    """A path from a config file: relative paths are relative to the file."""
    p = Path(str(value)).expanduser()
    return p if p.is_absolute() else config_path.parent / p


def read_api_key(config: LLMConfig) -> tuple[str | None, str]:
    """(key, where it comes from) or (None, why there is none). The reason never holds the key."""
    if config.api_key_file is not None:
        try:
            key = Path(config.api_key_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            return None, f"cannot read the API key file {config.api_key_file} ({exc.strerror})"
        if not key:
            return None, f"the API key file {config.api_key_file} is empty"
        return key, f"file {config.api_key_file}"
    key = os.environ.get(config.api_key_env, "").strip()
    if not key:
        return None, f"no API key: the environment variable {config.api_key_env} is not set"
    return key, f"environment variable {config.api_key_env}"


def endpoint_available(config: LLMConfig) -> tuple[bool, str]:
    """Whether the model can be asked: an API key is configured and the endpoint is a usable URL.

    Makes no network call. On False the reason says what is missing (never a secret); the
    caller then writes no numbers that need the model and says that it did not run.
    """
    key, why = read_api_key(config)
    if key is None:
        return False, why
    url = config.resolved_base_url()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        source = "base_url" if config.base_url else f"${config.base_url_env}"
        return False, f"the judge endpoint ({source}) is not an http(s) URL: {public_url(url)!r}"
    return True, f"{config.model} at {public_url(url)} (key from the {why})"


class Redactor:
    """Replaces the API key in any text before it is logged, stored, raised or returned."""

    def __init__(self, secret: str | None):
        self._secret = secret if secret and len(secret) >= MIN_SECRET_LENGTH else None

    def __call__(self, text: str | None) -> str | None:
        if text is None or self._secret is None:
            return text
        return text.replace(self._secret, "[REDACTED]")
