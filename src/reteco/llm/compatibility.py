"""What differs between OpenAI-compatible servers, and how a run finds out before it pays.

Three things live here, all pure functions of a request body and a server's answer:

- ``shape_request``: the request for the configured ``response_format`` mode. Callers build
  the strict ``json_schema`` request (OpenAI's structured outputs); ``json_object`` replaces
  it by ``{"type": "json_object"}`` and ``none`` drops it, and both then append the schema's
  JSON (sorted keys, so the text is deterministic and the cache key stable) to the system
  message, since the server no longer enforces it. The caller's reply validator runs in every
  mode: a reply out of the schema is re-asked, then "invalid", never a score.
- ``rejected_parameter``: which request parameter a server names when it refuses the request
  as malformed (HTTP 400 or 422 whose error names a parameter; a 500 that names one and says
  the input is invalid, as llama-cpp-python's server answers ``response_format.type:
  Input should be 'text' or 'json_object'``), with ``setting_hint``: the config key to change.
  Such a request is never retried: the same body gets the same refusal.
- ``preflight_body``: the one tiny request a run sends before any judgment, shaped exactly like
  the run's requests (model, ``response_format``, token limit parameter, temperature, seed,
  reasoning effort) but
  with a one-line message and a token cap of ``PREFLIGHT_TOKENS``, so a server that refuses a
  parameter costs one request, not one per judgment times the retries.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from reteco.llm.config import TOKEN_LIMIT_PARAMS

#: The user message of the preflight request (the fake test server recognises it by this text).
PREFLIGHT_MESSAGE = 'reteco preflight: reply with the JSON object {"ok": true}.'
PREFLIGHT_TOKENS = 16

SCHEMA_INTRO = "Reply with one JSON object, and nothing else, that satisfies this JSON schema:"

# Words with which servers say that the request, not the server, is wrong. A 500 counts as a
# refusal only with one of them AND a parameter named, so "upstream down" stays retryable.
_INVALID_INPUT = re.compile(
    r"invalid|input should be|validation error|not supported|unsupported|unrecognized|unknown (?:parameter|field|argument)"
    r"|extra (?:inputs|fields) (?:are )?not permitted|unexpected (?:keyword )?argument|not allowed|must be",
    re.IGNORECASE,
)
# Searched for by name in an error text: the settings a judge config controls. "messages" and
# "model" are left out of the text search: "This model's maximum context length ... your
# messages" is an error about one item's length, not about a setting.
_SEARCHED = ("response_format", *TOKEN_LIMIT_PARAMS, "seed", "temperature", "reasoning_effort")


def shape_request(body: Mapping[str, Any], mode: str) -> dict[str, Any]:
    """The request ``body`` (built with a strict json_schema ``response_format``) for ``mode``:
    ``json_schema`` (unchanged), ``json_object`` or ``none`` (see the module docstring)."""
    out = dict(body)
    if mode == "json_schema" or "response_format" not in body:
        return out
    schema = body["response_format"]["json_schema"]["schema"]
    note = f"\n\n{SCHEMA_INTRO}\n{json.dumps(schema, sort_keys=True, indent=2, ensure_ascii=False)}\n"
    messages = [dict(m) for m in body["messages"]]
    system = next((m for m in messages if m.get("role") == "system"), None)
    if system is None:
        messages.insert(0, {"role": "system", "content": note.lstrip("\n")})
    else:
        system["content"] = str(system.get("content") or "").rstrip("\n") + note
    out["messages"] = messages
    del out["response_format"]
    if mode == "json_object":
        out["response_format"] = {"type": "json_object"}
    return out


def token_limit_param(body: Mapping[str, Any]) -> str | None:
    """The token cap's parameter name in a request body, if any."""
    return next((p for p in TOKEN_LIMIT_PARAMS if p in body), None)


def preflight_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """The tiny request shaped like ``body`` (the first request the run would send)."""
    probe = {k: v for k, v in body.items() if k != "messages"}
    probe["messages"] = [{"role": "user", "content": PREFLIGHT_MESSAGE}]
    param = token_limit_param(body)
    if param is not None:
        probe[param] = min(int(body[param]), PREFLIGHT_TOKENS)
    return probe


def ignored_token_cap(body: Mapping[str, Any], completion: Mapping[str, Any]) -> str | None:
    """A warning when a reply used more completion tokens than the request's cap allowed (the
    server ignores the cap's parameter: llama-cpp-python's ignores ``max_completion_tokens``)."""
    param = token_limit_param(body)
    usage = completion.get("usage")
    used = usage.get("completion_tokens") if isinstance(usage, Mapping) else None
    if param is None or not isinstance(used, int) or isinstance(used, bool) or used <= body[param]:
        return None
    other = next(p for p in TOKEN_LIMIT_PARAMS if p != param)
    return (
        f"the server reported {used} completion tokens for a cap of {body[param]}: it seems to ignore "
        f"`{param}` (replies are not cut at max_completion_tokens); try `token_limit_param: {other}` in the judge config"
    )


def rejected_parameter(status: int | None, body_text: str, error: object, request: Mapping[str, Any]) -> str | None:
    """The parameter of ``request`` that the server refused as malformed, or None.

    ``status`` 400 or 422: the error's ``param`` field (OpenAI's errors carry one), else the
    first setting named in its text. 500: the same, but only when the text also says the input
    is invalid (llama-cpp-python reports its request validation errors as 500). Anything else:
    None (a transient failure, or a refusal that names no parameter).
    """
    if status not in (400, 422, 500):
        return None
    # The decoded message first: in the raw JSON body a newline is the two characters "\n",
    # which would glue an "n" to the name that follows it.
    text = f"{_error_message(error)}\n{body_text or ''}"
    if status == 500 and not _INVALID_INPUT.search(text):
        return None
    declared = _declared_param(error)
    if declared is not None and declared != "messages" and (declared in request or declared == "model"):
        return declared
    for name in _SEARCHED:
        if name in request and re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text):
            return name
    return None


def _error_message(error: object) -> str:
    """The ``message`` of an OpenAI-style error body (``{"error": {"message"}}``), or ""."""
    inner = error.get("error", error) if isinstance(error, dict) else None
    message = inner.get("message") if isinstance(inner, dict) else None
    return message if isinstance(message, str) else ""


def _declared_param(error: object) -> str | None:
    """The root name of an OpenAI-style error's ``param`` ("response_format.type" -> "response_format")."""
    inner = error.get("error", error) if isinstance(error, dict) else None
    param = inner.get("param") if isinstance(inner, dict) else None
    if not isinstance(param, str) or not param:
        return None
    return re.split(r"[.\[]", param, maxsplit=1)[0]


def setting_hint(param: str, request: Mapping[str, Any]) -> str:
    """Which judge config setting to change when the server refuses ``param``."""
    if param == "response_format":
        current = (request.get("response_format") or {}).get("type")
        if current == "json_object":
            return "set `response_format: none` in the judge config (the schema stays in the system message)"
        return ("set `response_format: json_object` in the judge config (the schema is then written into the "
                "system message), or `none`")
    if param in TOKEN_LIMIT_PARAMS:
        other = next(p for p in TOKEN_LIMIT_PARAMS if p != param)
        return f"set `token_limit_param: {other}` in the judge config"
    if param in ("seed", "temperature"):
        return f"set `{param}: null` in the judge config (the server then uses its default; the signature changes)"
    if param == "reasoning_effort":
        return ("set `reasoning_effort: null` in the judge config (a model that is not a reasoning model takes "
                "none), or another effort the model accepts; the signature changes")
    if param == "model":
        return "check `model` in the judge config: the server does not serve it under that name"
    return f"the judge config has no setting that removes `{param}`; this server cannot be used as it is"
