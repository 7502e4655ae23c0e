"""The judge probe: whether the judge's endpoint answers from Codabench's compute worker.

Whether the default queue's workers reach the internet is the worker operator's choice
(``COMPETITION_CONTAINER_NETWORK_DISABLED``, ``compute_worker.py``), invisible from a bundle.
Without it every judged run of 2b fails (``scoring_program.refuse_unranked``) and is judged after
the phase. So before a judged phase opens, the organizers upload this small competition
(``reteco judge-probe``: ``reteco_judge_probe.zip``) to the queue the real one will use, submit
its empty solution, and read the result:

- its scoring program (this module's ``main``, with ``reteco.llm.model_retirement``: standard
  library only, so it runs on the stock image without vendor/) asks the endpoint
  ``GET {base_url}/models/{model}`` and sends one tiny chat completion (a few tokens), timing
  both, and reads the model the server answered with and its announced ``shutdown_date``
  (else the table of known dates), warning for each judged phase that ends after that date;
- the log (the organizers are its only submitters) says it in words; ``probe.json`` in the
  scoring output (hidden: ``hide_score_output``) holds the same with the endpoint's host; the
  key is in neither. The leaderboard shows ``reachable`` (1 or 0) and ``answer_s``.

Exit 0 whatever the endpoint did: the probe reports, it does not fail. The reference data holds
``probe.json`` (endpoint, model, the judged phases' ends) and ``judge/api_key``, as a judged
phase's does; the probe competition is never published.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from reteco.llm.model_retirement import SOURCE, ask_model, known_shutdown, retirement_warning

PROBE_FILE = "probe.json"
PROBE_FORMAT = "reteco-judge-probe/1"
KEY_MEMBER = "judge/api_key"  # reteco.workbench.codabench.check.judge_rules.KEY_MEMBER: check-bundle's key search
BUNDLE_NAME = "reteco_judge_probe.zip"
PROBE_MESSAGE = "Reply with the single word OK."


def probe(record: dict, key: str | None, *, timeout_s: float = 20.0) -> dict:
    """Ask the endpoint of ``record`` (``probe.json``) about its model, then one tiny completion."""
    base_url, model = record["base_url"], record["model"]
    answer = ask_model(base_url, key, model, timeout_s=timeout_s)
    completion = _complete(base_url, key, model, timeout_s)
    shutdown, where = answer.shutdown_date, "announced by the endpoint"
    if shutdown is None:
        shutdown, where = known_shutdown(model), f"reteco's table of announced dates: {SOURCE}"
    warnings = [w for w in (retirement_warning(model, shutdown, p["name"], p.get("end"), where)
                            for p in record.get("phases", [])) if w]
    return {
        "format": PROBE_FORMAT,
        "endpoint_host": urlsplit(base_url).netloc.rsplit("@", 1)[-1],
        "model": model,
        "models_request": {"reachable": answer.reachable, "status": answer.status, "seconds": round(answer.seconds, 3),
                           "model": answer.model, "shutdown_date": answer.shutdown_date, "failure": answer.failure},
        "completion": completion,
        "shutdown_date": shutdown,
        "shutdown_source": where if shutdown else None,
        "warnings": warnings,
        "reachable": bool(completion["ok"]),
    }


def _complete(base_url: str, key: str | None, model: str, timeout_s: float) -> dict:
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": PROBE_MESSAGE}],
                       "max_completion_tokens": 5, "temperature": 0}).encode()
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    request = urllib.request.Request(f"{base_url.rstrip('/')}/chat/completions", data=body, headers=headers)
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 - the organizers' endpoint
            reply = json.loads(response.read())
        seconds = time.monotonic() - started
        answered = reply.get("model") if isinstance(reply, dict) else None
        return {"ok": True, "status": 200, "seconds": round(seconds, 3), "model": answered, "failure": None}
    except urllib.error.HTTPError as exc:
        return {"ok": False, "status": exc.code, "seconds": round(time.monotonic() - started, 3), "model": None,
                "failure": f"the endpoint answered HTTP {exc.code}"}
    except (urllib.error.URLError, OSError, ValueError) as exc:
        kind = "timed out" if "timed out" in str(getattr(exc, "reason", exc)) else "could not be reached"
        return {"ok": False, "status": None, "seconds": round(time.monotonic() - started, 3), "model": None,
                "failure": f"the endpoint {kind}"}


def report_lines(result: dict) -> list[str]:
    """The probe's result in words (no key; the endpoint by host only in probe.json)."""
    done = result["completion"]
    if done["ok"]:
        lines = [f"judge probe: the judge's endpoint answered a completion from this worker in {done['seconds']} s; "
                 f"model asked {result['model']}, answered by {done['model'] or 'an unnamed model'}"]
    else:
        lines = [f"judge probe: the judge's endpoint gave no completion from this worker: {done['failure']} "
                 f"(after {done['seconds']} s). Judged runs of 2b on this queue would all fail and be judged after "
                 "the phase: use reteco judge-submissions, or a queue whose worker reaches the endpoint "
                 "(docs/codabench_judge.md)"]
    models = result["models_request"]
    lines.append(f"judge probe: GET models/{result['model']}: " + (
        f"HTTP {models['status']} in {models['seconds']} s" if models["reachable"] else models["failure"]))
    if result["shutdown_date"]:
        lines.append(f"judge probe: announced shutdown date {result['shutdown_date']} ({result['shutdown_source']})")
    else:
        lines.append("judge probe: no shutdown date announced for the model")
    lines += [f"WARNING: {w}" for w in result["warnings"]]
    return lines


def main(argv: list[str]) -> int:
    """``probe.py INPUT OUTPUT``: probe, write ``probe.json`` and ``scores.json``, print the report."""
    if len(argv) != 2:
        print("usage: probe.py INPUT_DIR OUTPUT_DIR", file=sys.stderr)
        return 2
    ref, output = Path(argv[0]) / "ref", Path(argv[1])
    record = json.loads((ref / PROBE_FILE).read_text(encoding="utf-8"))
    key_file = ref / KEY_MEMBER
    key = key_file.read_text(encoding="utf-8").strip() if key_file.is_file() else None
    result = probe(record, key)
    output.mkdir(parents=True, exist_ok=True)
    (output / PROBE_FILE).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (output / "scores.json").write_text(json.dumps(
        {"reachable": 1 if result["reachable"] else 0, "answer_s": result["completion"]["seconds"]}) + "\n")
    for line in report_lines(result):
        print(line)
    return 0
