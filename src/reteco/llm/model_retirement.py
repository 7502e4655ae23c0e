"""Announced shutdown dates of judge models, and what the judge's endpoint says of its model.

A judge model that leaves its API during a judged phase stops the judging there (every run then
ends "the judge's service does not offer the judge's model"), so the date is checked where it can
be: the judge probe asks the endpoint from the compute worker (``reteco.codabench.program.judge_probe``),
the build asks it when it reaches the endpoint and ``check-bundle`` reads the table below.

``GET {base_url}/models/{model}`` answers OpenAI's Model object, which may carry
``shutdown_date`` (``openai.types.Model.shutdown_date``: "the date when the model will shut
down, or null if not announced"); other OpenAI-compatible servers (vLLM, llama.cpp) answer
without it, or not at all.

``KNOWN_SHUTDOWN_DATES``: the dates OpenAI announced, as its Python SDK lists them
(``SOURCE``), every entry of its list. The gpt-4o and gpt-4.1 snapshots leave the API on
2027-01-14, inside the Evaluation phase (2027-01-10 to 2027-01-31). A model the list does not
name has no announced date (the SDK marks "gpt-5.1-mini", "not a supported model ID", with none).
Update the table from the source when it changes: ``tests/llm/test_model_retirement.py`` holds
it to the installed SDK's list. What the endpoint itself answers (``ask_model``: the Model
object's ``shutdown_date``) overrides the table wherever it is asked (the judge probe).

Standard library only: the probe's scoring program carries this file and runs on the worker's
image without reteco's dependencies.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timezone

SOURCE = ("openai-python 3.63.0, openai/types/shared/chat_model.py (the 'Deprecated values' list: "
          "'Announced shutdown date'), which points to OpenAI's API deprecations page")
_BY_DATE = {
    "2024-09-13": ("gpt-3.5-turbo-16k", "gpt-3.5-turbo-0301", "gpt-3.5-turbo-0613", "gpt-3.5-turbo-16k-0613"),
    "2024-12-06": ("gpt-4-vision-preview",),
    "2025-06-06": ("gpt-4-32k", "gpt-4-32k-0314", "gpt-4-32k-0613"),
    "2025-07-28": ("o1-preview", "o1-preview-2024-09-12"),
    "2025-10-10": ("gpt-4o-audio-preview-2024-10-01",),
    "2025-10-27": ("o1-mini", "o1-mini-2024-09-12"),
    "2026-02-12": ("codex-mini-latest",),
    "2026-02-17": ("chatgpt-4o-latest",),
    "2026-03-26": ("gpt-4-0125-preview", "gpt-4-turbo-preview", "gpt-4-0314"),
    "2026-05-07": ("gpt-4o-audio-preview", "gpt-4o-audio-preview-2024-12-17", "gpt-4o-audio-preview-2025-06-03",
                   "gpt-4o-mini-audio-preview", "gpt-4o-mini-audio-preview-2024-12-17"),
    "2026-07-23": ("gpt-5.1-codex", "gpt-5.1-chat-latest", "gpt-5-chat-latest", "gpt-4o-search-preview",
                   "gpt-4o-mini-search-preview", "gpt-4o-search-preview-2025-03-11",
                   "gpt-4o-mini-search-preview-2025-03-11"),
    "2026-08-10": ("gpt-5.3-chat-latest", "gpt-5.2-chat-latest"),
    "2026-09-28": ("gpt-3.5-turbo-1106",),
    "2026-10-23": ("gpt-4.1-nano", "gpt-4.1-nano-2025-04-14", "o4-mini", "o4-mini-2025-04-16", "o3-mini",
                   "o3-mini-2025-01-31", "o1", "o1-2024-12-17", "gpt-4o-2024-05-13", "gpt-4-turbo",
                   "gpt-4-turbo-2024-04-09", "gpt-4-1106-preview", "gpt-4", "gpt-4-0613", "gpt-3.5-turbo",
                   "gpt-3.5-turbo-0125"),
    "2026-12-11": ("gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-5-2025-08-07", "gpt-5-mini-2025-08-07",
                   "gpt-5-nano-2025-08-07", "o3", "o3-2025-04-16"),
    "2027-01-14": ("gpt-4.1", "gpt-4.1-mini", "gpt-4.1-2025-04-14", "gpt-4.1-mini-2025-04-14", "gpt-4o",
                   "gpt-4o-2024-11-20", "gpt-4o-2024-08-06", "gpt-4o-mini", "gpt-4o-mini-2024-07-18"),
    "2027-01-20": ("gpt-audio-mini", "gpt-audio-mini-2025-12-15"),
    "2027-04-01": ("gpt-5.4-nano", "gpt-5.4-nano-2026-03-17", "gpt-5.1", "gpt-5.1-2025-11-13"),
}
KNOWN_SHUTDOWN_DATES: dict[str, str] = {model: date for date, models in _BY_DATE.items() for model in models}
DATE_TIME = "%Y-%m-%d %H:%M:%S"  # how competition.yaml writes a phase's end (UTC)


@dataclass(frozen=True)
class ModelAnswer:
    """What ``GET {base_url}/models/{model}`` gave: never the key, never the server's text."""

    reachable: bool  # an HTTP answer came back (any status)
    status: int | None
    seconds: float
    model: str | None  # the id the server answered with
    shutdown_date: str | None  # as announced ("YYYY-MM-DD"), None when not announced
    failure: str | None  # why there is no usable answer, in plain words


def ask_model(base_url: str, api_key: str | None, model: str, *, timeout_s: float = 10.0) -> ModelAnswer:
    """Ask the endpoint about ``model``; one request, no retry."""
    url = f"{base_url.rstrip('/')}/models/{model}"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}"} if api_key else {})
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 - the organizers' endpoint
            body = response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        return ModelAnswer(True, exc.code, time.monotonic() - started, None, None, f"the endpoint answered HTTP {exc.code}")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        kind = "timed out" if "timed out" in str(reason) else "could not be reached"
        return ModelAnswer(False, None, time.monotonic() - started, None, None, f"the endpoint {kind}")
    seconds = time.monotonic() - started
    try:
        record = json.loads(body)
    except ValueError:
        return ModelAnswer(True, status, seconds, None, None, "the endpoint's answer is not JSON")
    if not isinstance(record, dict):
        return ModelAnswer(True, status, seconds, None, None, "the endpoint's answer is not a model object")
    return ModelAnswer(True, status, seconds, record.get("id") if isinstance(record.get("id"), str) else None,
                       as_date(record.get("shutdown_date")), None)


def as_date(value) -> str | None:
    """A ``shutdown_date`` as ``YYYY-MM-DD`` (a date string, a date-time string or Unix seconds), else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value, tz=timezone.utc).strftime("%Y-%m-%d")
    if isinstance(value, str) and len(value) >= 10:
        try:
            return datetime.strptime(value[:10], "%Y-%m-%d").strftime("%Y-%m-%d")
        except ValueError:
            return None
    return None


def known_shutdown(model: str) -> str | None:
    """The table's announced shutdown date of ``model`` (``KNOWN_SHUTDOWN_DATES``), or None."""
    return KNOWN_SHUTDOWN_DATES.get(model)


def retirement_warning(model: str, shutdown: str | None, phase: str, phase_end: str | None, where: str) -> str | None:
    """A warning when ``model`` leaves its API (``shutdown``, YYYY-MM-DD, from ``where``) before
    ``phase`` ends (``phase_end`` 'YYYY-MM-DD HH:MM:SS' UTC; None: a phase without an end), else None."""
    if shutdown is None:
        return None
    gone = datetime.strptime(shutdown, "%Y-%m-%d")
    if phase_end is not None and datetime.strptime(phase_end, DATE_TIME) < gone:
        return None
    ends = f"ends {phase_end} UTC" if phase_end else "has no end"
    return (f"the judge model {model} has an announced shutdown date of {shutdown} ({where}), and phase {phase!r} "
            f"{ends}: its runs would stop judging from that day; judge with another model (a new signature) or "
            "judge that phase's submissions before the date")
