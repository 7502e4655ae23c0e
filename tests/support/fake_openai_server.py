"""A real HTTP server on 127.0.0.1 speaking enough of the OpenAI API to test the judge.

Endpoints: POST /v1/chat/completions; POST /v1/files (multipart), GET /v1/files/{id},
GET /v1/files/{id}/content; POST /v1/batches, GET /v1/batches/{id}; GET /v1/models/{id} (a
Model object; ``server.models`` gives ids their fields, e.g. ``shutdown_date``).

What a chat request gets, first match wins: the next scripted ``Reply`` (``server.script``,
FIFO); the first rule whose predicate accepts the request (``server.rules``: (predicate on the
request body, Reply or callable body -> Reply)); else ``server.judge(body)``, by default a
deterministic fake judge scoring 1..5 from a hash of the user message. Batch lines go
through the same choice. ``latency_s`` delays every chat answer (the bench's injected
latency); ``Reply.delay_s`` delays one.

Preflight requests (reteco's one tiny request before a run, recognised by
``reteco.llm.compatibility.PREFLIGHT_MESSAGE``) are answered by ``server.preflight(body)``, by
default a small valid completion, before the script and the rules (so scripted replies stay
the judgments'), and recorded in ``server.preflight_requests``, not in ``server.requests``:
``chat_calls`` counts judgment requests, ``all_chat_calls`` every chat request.

``mode=LLAMA_CPP_PYTHON`` behaves like llama-cpp-python's server (0.3.x): every chat request
whose ``response_format.type`` is ``json_schema`` gets HTTP 500 with its pydantic validation
text, and the cap on completion tokens is ignored (the preflight's reply reports more tokens
than it allowed).

``mode=REASONING`` behaves as OpenAI's reasoning models (the gpt-5.x family) do on Chat
Completions: a ``temperature`` other than 1 gets HTTP 400 ``Unsupported value: 'temperature' does
not support 0 with this model. Only the default (1) value is supported.`` (``param``
"temperature", code "unsupported_value"), and ``max_tokens`` a 400 naming it (``Use
'max_completion_tokens' instead``); ``reasoning_effort`` is taken (one of "none", "minimal",
"low", "medium", "high", "xhigh", "max"; else a 400 naming it) and spends ``REASONING_TOKENS[effort]``
reasoning tokens before the reply (default "medium"), reported in
``usage.completion_tokens_details.reasoning_tokens`` and counted inside ``completion_tokens``
and the cap: when reasoning and reply do not fit in ``max_completion_tokens``, the reply is cut
(``finish_reason`` "length"; empty when the reasoning alone filled the cap). Other modes take
``reasoning_effort`` and ignore it. ``reasoning_efforts`` lists the effort of every judgment request, in order.

Usage. By default every completion reports fixed usage (100 prompt + 20 completion tokens; the
preflight 12 + what it used). With ``count_tokens=True`` the server counts like a real one, by
one documented rule: a request's prompt is its messages written out as ``<|role|>\ncontent\n``
one after the other; the prompt tokens are that text's ASCII characters / 4 (rounded up) plus
one per other character, and the completion tokens the reply content's, by the same rule.
``usage.prompt_tokens_details.cached_tokens`` is the same count of the longest prefix of the
prompt text shared with a prompt this server answered before (a prefix cache that never
evicts), rounded down to a multiple of ``cache_block_tokens`` (1: any shared prefix; OpenAI
caches in steps of 128 from 1,024 tokens). ``usage_reported`` lists (prompt, cached, completion)
per judgment answer, in order: what tests compare the cache's columns with.

``echo_auth=True`` makes the server hostile: it copies the request's Authorization header
into every body it sends (errors, completions, batch files), to prove the key never leaks.

Used by tests (the fixtures ``fake_openai`` and ``judge_config`` of tests/conftest.py start one
per test) and by bench/bench_judge.py and bench/bench_scoring_program_judge.py.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from reteco.llm.compatibility import PREFLIGHT_MESSAGE, token_limit_param

LLAMA_CPP_PYTHON = "llama-cpp-python"
REASONING = "reasoning"
#: Reasoning tokens a reply spends per ``reasoning_effort`` in ``REASONING`` mode (made-up, fixed).
REASONING_TOKENS = {"none": 0, "minimal": 16, "low": 96, "medium": 384, "high": 1536, "xhigh": 4096, "max": 8192}
DEFAULT_EFFORT = "medium"
# What llama-cpp-python's server (FastAPI + pydantic v2) answers to a json_schema response_format:
# its route error handler wraps the validation error's text as a 500 "internal_server_error".
LLAMA_CPP_PYTHON_REJECTION = (
    "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  Input should be 'text' or "
    "'json_object' [type=literal_error, input_value='json_schema', input_type=str]\n    For further information "
    "visit https://errors.pydantic.dev/2.11/v/literal_error"
)


@dataclass
class Reply:
    """One HTTP answer: status, body (dict -> JSON, str/bytes as is), headers, extra delay."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


def completion(content: str | None, *, refusal: str | None = None, finish_reason: str = "stop",
               fingerprint: str | None = "fp_fake_1", model: str = "fake-judge") -> Reply:
    """A 200 chat.completion whose single choice carries ``content`` (or a refusal)."""
    return Reply(200, {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": fingerprint,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": refusal},
            "finish_reason": finish_reason,
            "logprobs": None,
        }],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    })


def judgment(score: Any, rationale: str = "fake rationale", *, injection: Any = None, **kwargs) -> Reply:
    """A completion whose content is the JSON judgment {"rationale", "score"} (prompt version 1),
    or {"rationale", "injection", "score"} when ``injection`` is given (version 2 on)."""
    value = {"rationale": rationale, "score": score} if injection is None else {
        "rationale": rationale, "injection": injection, "score": score}
    return completion(json.dumps(value), **kwargs)


def asks_injection_flag(body: dict) -> bool:
    """Whether the request's reply schema has the ``injection`` flag (prompt version 2 on)."""
    schema = body.get("response_format", {}).get("json_schema", {}).get("schema", {})
    return "injection" in schema.get("properties", {})


def first_user_text(body: dict) -> str:
    """The first user message of a chat request: the judgment's data (a re-ask adds more)."""
    return next((m["content"] for m in body.get("messages", []) if m.get("role") == "user"), "")


def http_error(status: int, message: str = "simulated failure", *, code: str | None = None,
               headers: dict[str, str] | None = None) -> Reply:
    """An OpenAI-style error body with ``status``."""
    return Reply(status, {"error": {"message": message, "type": "fake_error", "code": code}}, headers or {})


def rate_limited(retry_after: str = "1") -> Reply:
    """A 429 with a Retry-After header."""
    return http_error(429, "Rate limit reached", code="rate_limit_exceeded", headers={"Retry-After": retry_after})


def user_text(body: dict) -> str:
    """All user-message text of a chat request (what rules usually look at)."""
    return "\n".join(m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user")


def fake_judge(body: dict) -> Reply:
    """A deterministic stand-in judge: the score is a hash of the first user message; the
    reply has the keys the request's schema asks for (never flagging an injection). A request
    for a relevance round's grade (its schema's "relevance") gets a grade 0..3 from the same hash."""
    digest = int(hashlib.sha256(first_user_text(body).encode()).hexdigest(), 16)
    schema = body.get("response_format", {}).get("json_schema", {}).get("schema", {})
    if "relevance" in schema.get("properties", {}):
        return completion(json.dumps({"rationale": f"fake grade {digest % 4}", "relevance": digest % 4}))
    score = 1 + digest % 5
    return judgment(score, f"fake judge gives {score}", injection=False if asks_injection_flag(body) else None)


def graded_judge(grades: dict[str, tuple[int, bool]]) -> Callable[[dict], Reply]:
    """A judge answering from a table: first user message -> (score, injection flag).

    The meta-evaluation tests build the table from the golden cases' own requests (each case's
    intended grade), so this judge gives every case exactly the grade its author intended.
    A request not in the table is a test bug: answered HTTP 400, never a made-up score.
    """

    def reply(body: dict) -> Reply:
        key = first_user_text(body)
        if key not in grades:
            return http_error(400, "graded_judge: a request that is not in the table")
        score, flagged = grades[key]
        return judgment(score, f"graded {score}", injection=flagged if asks_injection_flag(body) else None)

    return reply


def rule_tokens(text: str) -> int:
    """Tokens by the server's documented rule: ASCII characters / 4, rounded up, plus one per
    other character (written here independently of reteco's estimate, which uses the same rule)."""
    ascii_chars = sum(1 for c in text if ord(c) < 128)
    return -(-ascii_chars // 4) + len(text) - ascii_chars


def prompt_text(body: dict) -> str:
    """A chat request's prompt as the server counts it: ``<|role|>\ncontent\n`` per message."""
    return "".join(f"<|{m.get('role')}|>\n{m.get('content') or ''}\n" for m in body.get("messages", []))


def common_prefix_length(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share."""
    end, shared, step = min(len(a), len(b)), 0, 4096
    while step:  # gallop over equal chunks, halving the chunk at a difference: fast on long prompts
        if shared + step <= end and a[shared:shared + step] == b[shared:shared + step]:
            shared += step
        else:
            step //= 2
    return shared


@dataclass
class Recorded:
    """A request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float


def is_preflight(body: dict) -> bool:
    """Whether a chat request is reteco's preflight."""
    return any(m.get("content") == PREFLIGHT_MESSAGE for m in body.get("messages", []) if isinstance(m, dict))


def reasoning_rejection(body: dict, mode: str | None) -> Reply | None:
    """The 400 a reasoning model gives a parameter it refuses (``REASONING`` mode: temperature other
    than 1, ``max_tokens``, an unknown effort), or None."""
    def refused(message: str, param: str, code: str) -> Reply:
        return Reply(400, {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}})

    if mode != REASONING:
        return None
    if "temperature" in body and body["temperature"] != 1:
        return refused(f"Unsupported value: 'temperature' does not support {body['temperature']} with this model. "
                       "Only the default (1) value is supported.", "temperature", "unsupported_value")
    if "max_tokens" in body:
        return refused("Unsupported parameter: 'max_tokens' is not supported with this model. "
                       "Use 'max_completion_tokens' instead.", "max_tokens", "unsupported_parameter")
    if "reasoning_effort" in body and body["reasoning_effort"] not in REASONING_TOKENS:
        return refused(f"Invalid value: '{body['reasoning_effort']}'. Supported values are: "
                       + ", ".join(f"'{e}'" for e in REASONING_TOKENS) + ".", "reasoning_effort", "invalid_value")
    return None


def with_reasoning(body: dict, reply: Reply) -> Reply:
    """``reply`` as a reasoning model gives it: ``REASONING_TOKENS`` of the request's effort spent
    first, inside ``completion_tokens`` and the request's cap; cut ("length") when both do not fit."""
    if not (reply.status == 200 and isinstance(reply.body, dict) and "choices" in reply.body):
        return reply
    reasoning = REASONING_TOKENS[body.get("reasoning_effort", DEFAULT_EFFORT)]
    cap = body.get("max_completion_tokens")
    out = json.loads(json.dumps(reply.body))
    choice = out["choices"][0]
    content = (choice.get("message") or {}).get("content") or ""
    usage = out.get("usage") or {}
    visible = rule_tokens(content)
    if isinstance(cap, int) and reasoning + visible > cap:
        reasoning = min(reasoning, cap)
        kept = cap - reasoning  # the reply's tokens that fit: 4 characters each, by the rule
        choice["message"]["content"] = content[:kept * 4]
        choice["finish_reason"] = "length"
        visible = rule_tokens(choice["message"]["content"])
    completion_tokens = reasoning + visible
    prompt = usage.get("prompt_tokens", 100)
    usage.update({"prompt_tokens": prompt, "completion_tokens": completion_tokens,
                  "total_tokens": prompt + completion_tokens,
                  "completion_tokens_details": {"reasoning_tokens": reasoning}})
    out["usage"] = usage
    return Reply(reply.status, out, reply.headers, reply.delay_s)


def llama_cpp_python_rejection() -> Reply:
    """llama-cpp-python's answer to a json_schema response_format."""
    return Reply(500, {"error": {"message": LLAMA_CPP_PYTHON_REJECTION, "type": "internal_server_error",
                                 "param": None, "code": None}})


class FakeOpenAI:
    """The server. ``start()`` returns the base URL (http://127.0.0.1:PORT/v1)."""

    def __init__(self, *, latency_s: float = 0.0, echo_auth: bool = False, mode: str | None = None,
                 count_tokens: bool = False, cache_block_tokens: int = 1):
        self.count_tokens = count_tokens
        self.cache_block_tokens = cache_block_tokens
        self.seen_prompts: list[str] = []  # the prefix cache (count_tokens)
        self.usage_reported: list[tuple[int, int, int]] = []
        self.reasoning_efforts: list[str | None] = []  # each judgment request's reasoning_effort
        self.latency_s = latency_s
        self.echo_auth = echo_auth
        self.mode = mode
        self.preflight_requests: list[Recorded] = []
        self.preflight: Callable[[dict], Reply] = self.default_preflight
        self.script: deque[Reply] = deque()
        self.rules: list[tuple[Callable[[dict], bool], Reply | Callable[[dict], Reply]]] = []
        self.judge: Callable[[dict], Reply] = fake_judge
        self.requests: list[Recorded] = []
        self.files: dict[str, dict] = {}
        self.batches: dict[str, dict] = {}
        self.batch_polls_until_done = 1  # retrieves answered "in_progress" before completion
        self.batch_final_status = "completed"
        self.batch_skip: Callable[[str], bool] = lambda custom_id: False  # lines left out of the output
        self.batch_create_reply: Reply | None = None  # set: POST /v1/batches answers this instead
        # GET /v1/models/{id}: None answers every id with a plain Model object (no shutdown_date);
        # a dict answers its ids (each object's fields added, e.g. shutdown_date) and 404 otherwise.
        self.models: dict[str, dict] | None = None
        self.in_flight = 0
        self.max_in_flight = 0  # the most chat requests the server was answering at once
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> str:
        handler = type("Handler", (_Handler,), {"fake": self})
        server = _Server(("127.0.0.1", 0), handler)
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self.base_url

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    # --- what tests read -------------------------------------------------------------------

    @property
    def chat_requests(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.path == "/v1/chat/completions"]

    @property
    def chat_calls(self) -> int:
        """How many chat completion requests reached the server."""
        return len(self.chat_requests)

    @property
    def all_chat_calls(self) -> int:
        """Every chat completion request that reached the server, preflights included."""
        with self._lock:
            return len(self.preflight_requests) + sum(1 for r in self.requests if r.path == "/v1/chat/completions")

    @property
    def batch_lines(self) -> int:
        """How many requests were submitted inside batches."""
        with self._lock:
            return sum(b["lines"] for b in self.batches.values())

    # --- behaviour -------------------------------------------------------------------------

    def choose(self, body: dict) -> Reply:
        with self._lock:
            if self.script:
                return self.script.popleft()
            rules = list(self.rules)
        for predicate, reply in rules:
            if predicate(body):
                return reply(body) if callable(reply) else reply
        return self.judge(body)

    def default_preflight(self, body: dict) -> Reply:
        """A small completion within the request's cap (beyond it, in llama-cpp-python mode)."""
        reply = completion('{"ok": true}')
        cap = body.get(token_limit_param(body) or "", 16)
        used = cap + 24 if self.mode == LLAMA_CPP_PYTHON else min(cap, 5)
        reply.body["usage"] = {"prompt_tokens": 12, "completion_tokens": used, "total_tokens": 12 + used}
        return reply

    def answer_chat(self, headers: dict[str, str], body: dict) -> Reply:
        """The reply to one chat request (recorded here): the mode, the preflight, then ``choose``."""
        rejected = self.mode == LLAMA_CPP_PYTHON and (body.get("response_format") or {}).get("type") == "json_schema"
        refusal = reasoning_rejection(body, self.mode)
        if is_preflight(body):
            with self._lock:
                self.preflight_requests.append(Recorded("POST", "/v1/chat/completions", headers, body, time.monotonic()))
            if refusal is not None:
                return refusal
            reply = llama_cpp_python_rejection() if rejected else self.preflight(body)
            return with_reasoning(body, reply) if self.mode == REASONING else reply
        self.record("POST", "/v1/chat/completions", headers, body)
        if refusal is not None:
            return refusal
        if rejected:
            return llama_cpp_python_rejection()
        if self.mode != REASONING:
            return self.counted(body, self.choose(body))
        with self._lock:
            self.reasoning_efforts.append(body.get("reasoning_effort"))
        return with_reasoning(body, self.counted(body, self.choose(body)))

    def counted(self, body: dict, reply: Reply) -> Reply:
        """``reply`` with the usage counted by the documented rule (``count_tokens``), recorded."""
        if not (self.count_tokens and reply.status == 200 and isinstance(reply.body, dict) and "choices" in reply.body):
            return reply
        prompt = prompt_text(body)
        with self._lock:
            shared = max((common_prefix_length(prompt, seen) for seen in self.seen_prompts), default=0)
            self.seen_prompts.append(prompt)
            prompt_tokens = rule_tokens(prompt)
            cached = rule_tokens(prompt[:shared]) // self.cache_block_tokens * self.cache_block_tokens
            content = reply.body["choices"][0].get("message", {}).get("content") or ""
            usage = (prompt_tokens, cached, rule_tokens(content))
            self.usage_reported.append(usage)
        body_out = {**reply.body, "usage": {
            "prompt_tokens": usage[0], "completion_tokens": usage[2], "total_tokens": usage[0] + usage[2],
            "prompt_tokens_details": {"cached_tokens": usage[1]}}}
        return Reply(reply.status, body_out, reply.headers, reply.delay_s)

    def record(self, method: str, path: str, headers: dict[str, str], body: Any) -> None:
        with self._lock:
            self.requests.append(Recorded(method, path, headers, body, time.monotonic()))

    def _run_batch(self, batch: dict, auth: str) -> None:
        lines = self.files[batch["input_file_id"]]["content"].decode().splitlines()
        out, err = [], []
        for line in lines:
            if not line.strip():
                continue
            request = json.loads(line)
            if self.batch_skip(request["custom_id"]):
                continue
            reply = self.counted(request["body"], self.choose(request["body"]))
            body = reply.body
            if self.echo_auth and isinstance(body, dict):
                body = _echo(body, auth)
            entry = {
                "id": f"batch_req_{uuid.uuid4().hex[:10]}",
                "custom_id": request["custom_id"],
                "response": {"status_code": reply.status, "request_id": uuid.uuid4().hex, "body": body},
                "error": None,
            }
            (out if reply.status == 200 else err).append(json.dumps(entry))
        batch["status"] = self.batch_final_status
        batch["request_counts"] = {"total": len(lines), "completed": len(out), "failed": len(err)}
        if out:
            batch["output_file_id"] = self._add_file(("\n".join(out) + "\n").encode(), "batch_output", "output.jsonl")
        if err:
            batch["error_file_id"] = self._add_file(("\n".join(err) + "\n").encode(), "batch_output", "errors.jsonl")

    def _add_file(self, content: bytes, purpose: str, filename: str) -> str:
        file_id = f"file-{uuid.uuid4().hex[:16]}"
        self.files[file_id] = {"content": content, "purpose": purpose, "filename": filename,
                               "created_at": int(time.time())}
        return file_id


def _echo(body: dict, auth: str) -> dict:
    """A hostile server's body: the caller's Authorization header copied everywhere it fits."""
    body = json.loads(json.dumps(body))
    if "error" in body and isinstance(body["error"], dict):
        body["error"]["message"] = f"{body['error'].get('message')} (you sent {auth})"
    for choice in body.get("choices", []):
        message = choice.get("message", {})
        if isinstance(message.get("content"), str):
            try:
                content = json.loads(message["content"])
                if isinstance(content, dict) and isinstance(content.get("rationale"), str):
                    content["rationale"] += f" [{auth}]"
                    message["content"] = json.dumps(content)
                else:
                    message["content"] += f" [{auth}]"
            except json.JSONDecodeError:
                message["content"] += f" [{auth}]"
        if message.get("refusal"):
            message["refusal"] += f" [{auth}]"
    body["echo"] = auth
    return body


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256  # the bench opens 64 connections at once
    block_on_close = False

    def handle_error(self, request, client_address):
        # A client that gave up (timeout tests) leaves a broken pipe behind: expected, not news.
        pass


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle's algorithm the second waits for the
    # client's delayed ACK (~40 ms), a latency no real server adds.
    disable_nagle_algorithm = True

    def log_message(self, format, *args):  # keep test output clean
        pass

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, reply: Reply) -> None:
        body = reply.body
        auth = self.headers.get("Authorization", "")
        if self.fake.echo_auth:
            if isinstance(body, dict):
                body = _echo(body, auth)
            elif isinstance(body, str):
                body = f"{body} {auth}"
        if isinstance(body, (dict, list)):
            data, ctype = json.dumps(body).encode(), "application/json"
        elif isinstance(body, bytes):
            data, ctype = body, "application/octet-stream"
        else:
            data, ctype = ("" if body is None else str(body)).encode(), "application/json"
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            for k, v in reply.headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def do_POST(self):
        raw = self._read_body()
        path = self.path.split("?")[0]
        headers = {k.lower(): v for k, v in self.headers.items()}
        if path == "/v1/chat/completions":
            body = json.loads(raw)
            with self.fake._lock:
                self.fake.in_flight += 1
                self.fake.max_in_flight = max(self.fake.max_in_flight, self.fake.in_flight)
            try:
                reply = self.fake.answer_chat(headers, body)
                delay = self.fake.latency_s + reply.delay_s
                if delay:
                    time.sleep(delay)
                self._send(reply)
            finally:
                with self.fake._lock:
                    self.fake.in_flight -= 1
        elif path == "/v1/files":
            fields = _multipart(self.headers.get("Content-Type", ""), raw)
            self.fake.record("POST", path, headers, {k: v for k, v in fields.items() if k != "file"})
            file_id = self.fake._add_file(fields["file"], fields.get("purpose", b"").decode(), "batch.jsonl")
            f = self.fake.files[file_id]
            self._send(Reply(200, {"id": file_id, "object": "file", "bytes": len(f["content"]),
                                   "created_at": f["created_at"], "filename": f["filename"],
                                   "purpose": f["purpose"], "status": "processed"}))
        elif path == "/v1/batches":
            body = json.loads(raw)
            self.fake.record("POST", path, headers, body)
            if self.fake.batch_create_reply is not None:
                self._send(self.fake.batch_create_reply)
                return
            if body.get("input_file_id") not in self.fake.files:
                self._send(http_error(404, "no such file"))
                return
            batch_id = f"batch_{uuid.uuid4().hex[:16]}"
            content = self.fake.files[body["input_file_id"]]["content"]
            batch = {
                "id": batch_id, "object": "batch", "endpoint": body["endpoint"],
                "input_file_id": body["input_file_id"], "completion_window": body["completion_window"],
                "status": "validating", "created_at": int(time.time()), "polls": 0,
                "lines": sum(1 for line in content.splitlines() if line.strip()),
            }
            self.fake.batches[batch_id] = batch
            self._send(Reply(200, _public_batch(batch)))
        else:
            self.fake.record("POST", path, headers, raw[:200])
            self._send(http_error(404, f"unknown path {path}"))

    def do_GET(self):
        path = self.path.split("?")[0]
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.fake.record("GET", path, headers, None)
        parts = path.strip("/").split("/")
        if len(parts) == 3 and parts[:2] == ["v1", "batches"] and parts[2] in self.fake.batches:
            batch = self.fake.batches[parts[2]]
            with self.fake._lock:
                batch["polls"] += 1
                ready = batch["polls"] > self.fake.batch_polls_until_done
                if batch["status"] in ("validating", "in_progress"):
                    batch["status"] = "in_progress"
            if ready and batch["status"] == "in_progress":
                self.fake._run_batch(batch, self.headers.get("Authorization", ""))
            self._send(Reply(200, _public_batch(batch)))
        elif len(parts) >= 3 and parts[:2] == ["v1", "models"]:
            model = "/".join(parts[2:])  # an id may hold a slash (meta-llama/...)
            models = self.fake.models
            if models is not None and model not in models:
                self._send(http_error(404, f"The model `{model}` does not exist", code="model_not_found"))
            else:
                time.sleep(self.fake.latency_s)
                self._send(Reply(200, {"id": model, "object": "model", "created": 1700000000, "owned_by": "fake",
                                       **((models or {}).get(model) or {})}))
        elif len(parts) == 4 and parts[:2] == ["v1", "files"] and parts[3] == "content" and parts[2] in self.fake.files:
            self._send(Reply(200, self.fake.files[parts[2]]["content"]))
        elif len(parts) == 3 and parts[:2] == ["v1", "files"] and parts[2] in self.fake.files:
            f = self.fake.files[parts[2]]
            self._send(Reply(200, {"id": parts[2], "object": "file", "bytes": len(f["content"]),
                                   "created_at": f["created_at"], "filename": f["filename"], "purpose": f["purpose"]}))
        else:
            self._send(http_error(404, f"unknown path {path}"))


def _public_batch(batch: dict) -> dict:
    return {k: v for k, v in batch.items() if k not in ("polls", "lines")}


def _multipart(content_type: str, raw: bytes) -> dict[str, bytes]:
    """The fields of a multipart/form-data body (name -> bytes)."""
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
    fields = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        fields[name] = part.get_payload(decode=True)
    return fields


TEST_KEY = "sk-reteco-test-KEY-0123456789abcdef"  # recognisable, so a leak is easy to grep
