"""Prompt versions 2, 3 and 4 on the real llama-server: prompt-processing time, cached
tokens, wall time; and the estimate against the tokens the server reports.

    .venv/bin/python bench/bench_judge_cost.py [--turns 3] [--subtrack 2c] [--threads 1]
        [--sample-passages CHARS] [--llama-cpp ../shared/tools/llama.cpp] [--order 2,3,3,2] [--json OUT]
    .venv/bin/python bench/bench_judge_cost.py --table

Judges TURNS golden turns (tests/support/golden_turns.py: the golden cases' own texts; 2c: five
passages a turn) on the five dimensions through ``run_judge``, once with prompt version 2 and once
with version 3 (``--order``: by default 2, 3, 3, 2, so that a drift in the shared machine's load
falls on both), each against a freshly started llama-server (one slot, its prompt cache on, as
shipped: ``--cache-prompt``) on 127.0.0.1, concurrency 1 so that a turn's five requests go one
after the other and the slot's cache can reuse their shared prefix. Replies are capped at 60
tokens and not re-asked (``max_reasks: 0``), alike for both versions: the random tiny model's
replies say nothing, the prompt side is what is measured. From the responses kept in the judge
cache it sums llama-server's ``timings.prompt_ms`` (prompt processing), ``timings.prompt_n``
(tokens processed), ``timings.cache_n`` and ``usage.prompt_tokens_details.cached_tokens``.

The tiny model's vocabulary has 354 tokens, so it counts about one token a character where
OpenAI's tokenizers count about four characters a token: its token counts show the layouts'
shares, not an API bill; the estimate's input tokens are compared as a ratio.

``--table``: no server; the estimate (``reteco.workbench.judge_audit.estimate``) of a 200-turn phase for 1, 50 and
180 submissions, per sub-track and prompt version (2, 3, 4), with the mean and least share of a
turn's prompt tokens in the prefix its five requests share, at gpt-4o-2024-08-06's input and
output list prices with the cached input at 50 %, 75 % and 90 % off and OpenAI's prompt-caching
rule (cached prefixes from 1,024 tokens), live, and through the Batch API at 50 % off (half
price; Batch API requests are not prompt-cached at a discount beyond that, so the batch column
halves the live one as an upper bound).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.golden_turns import every_dimension, golden_turns
from support.paths import SHARED

from reteco.judge import load_judge_config, run_judge
from reteco.judge.prompts import load_prompt_set
from reteco.llm.cache import CACHE_FILE
from reteco.workbench.judge_audit.estimate import estimate_judging


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(llama_cpp: Path, threads: int, context: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = subprocess.Popen(
        [str(llama_cpp / "bin" / "llama-server"), "--model", str(llama_cpp / "models" / "tiny-biased.gguf"),
         "--alias", "tiny-judge", "--host", "127.0.0.1", "--port", str(port), "-c", str(context), "-np", "1",
         "-t", str(threads)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                if r.status == 200:
                    return process, f"http://127.0.0.1:{port}/v1"
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("llama-server did not become healthy")


def server_figures(cache_dir: Path) -> dict:
    sums = {"requests": 0, "prompt_ms": 0.0, "prompt_n": 0, "cache_n": 0, "prompt_tokens": 0, "cached_tokens": 0}
    with sqlite3.connect(cache_dir / CACHE_FILE) as conn:
        for (raw,) in conn.execute("SELECT response_json FROM calls WHERE via = 'chat'"):
            body = json.loads(raw)
            timings, usage = body.get("timings", {}), body.get("usage", {})
            sums["requests"] += 1
            sums["prompt_ms"] += timings.get("prompt_ms", 0.0)
            sums["prompt_n"] += timings.get("prompt_n", 0)
            sums["cache_n"] += timings.get("cache_n", 0)
            sums["prompt_tokens"] += usage.get("prompt_tokens", 0)
            sums["cached_tokens"] += (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
    return sums


def run(version: int, items, llama_cpp: Path, threads: int, context: int) -> dict:
    process, url = start_server(llama_cpp, threads, context)
    try:
        config = dataclasses.replace(
            load_judge_config(), prompt_version=version, prompts=load_prompt_set(version), base_url=url, model="tiny-judge",
            concurrency=1, max_completion_tokens=60, max_reasks=0, timeout_s=600, max_retries=0)
        estimate = estimate_judging(items, config)
        with tempfile.TemporaryDirectory() as tmp:
            started = time.monotonic()
            outcomes = run_judge(items, config, cache_dir=Path(tmp), progress=False)
            wall = time.monotonic() - started
            figures = server_figures(Path(tmp))
    finally:
        process.kill()
        process.wait()
    chars = sum(len(m["content"]) for i in items for m in config.prompts.messages(i))
    return {"version": version, "judgments": len(outcomes), "wall_s": round(wall, 1),
            "statuses": {s: sum(1 for o in outcomes if o.status == s) for s in ("ok", "invalid", "error")},
            **{k: round(v, 1) if isinstance(v, float) else v for k, v in figures.items()},
            "prompt_chars": chars, "estimated_input_tokens": estimate.input_tokens,
            "estimated_cacheable_tokens": estimate.cacheable_tokens}


#: OpenAI's list prices for gpt-4o-2024-08-06 (dollars per million tokens: input, cached input,
#: output) as published in 2024-2025; check them before relying on the table.
GPT_4O_PRICES = {"input": 2.5, "cached_input": 1.25, "output": 10.0}
#: The table's three price schedules: gpt-4o's input and output prices, cached input at 50 %, 75 %
#: and 90 % off (the discounts OpenAI's model families have had: gpt-4o, gpt-4.1, the gpt-5 family).
#: What matters is the order of the versions at each discount, not the dollars.
CACHE_DISCOUNTS = (0.5, 0.75, 0.9)
VERSIONS = (2, 3, 4)


def shared_prefix_share(config, item) -> float:
    """The share of a turn's five prompts' tokens (the fake server's rule) in the prefix they all share."""
    from support.fake_openai_server import common_prefix_length, prompt_text, rule_tokens

    from reteco.judge import build_request

    texts = [prompt_text(build_request(i, config)) for i in every_dimension([item])]
    prefix = min(common_prefix_length(texts[0], t) for t in texts)
    return sum(rule_tokens(t[:prefix]) for t in texts) / sum(rule_tokens(t) for t in texts)


def cost_table(turns: int, submissions: list[int]) -> list[dict]:
    """The estimate (no server) for a phase of TURNS turns, per sub-track and prompt version, at
    gpt-4o's input and output prices with the cached input at each of ``CACHE_DISCOUNTS`` off,
    with OpenAI's caching rule (prefixes of 1,024 tokens or more), live and batch."""
    from reteco.workbench.judge_audit.estimate import OPENAI_CACHE_MIN_TOKENS

    rows = []
    for sub in ("2b", "2c"):
        sample = golden_turns(sub)
        items = every_dimension(sample)
        for version in VERSIONS:
            base = dataclasses.replace(load_judge_config(), prompt_version=version, prompts=load_prompt_set(version))
            shares = [shared_prefix_share(base, item) for item in sample]
            row_money = {}
            for discount in CACHE_DISCOUNTS:
                prices = {**GPT_4O_PRICES, "cached_input": GPT_4O_PRICES["input"] * (1 - discount)}
                config = dataclasses.replace(base, price_per_million=prices)
                one = estimate_judging(items, config, min_cached_tokens=OPENAI_CACHE_MIN_TOKENS)
                row_money[discount] = one.scaled(turns / len(sample))
            for n in submissions:
                phase = row_money[CACHE_DISCOUNTS[0]].scaled(n)
                rows.append({"subtrack": sub, "version": version, "turns": turns, "submissions": n,
                             "shared_prefix_mean": round(sum(shares) / len(shares), 4),
                             "shared_prefix_min": round(min(shares), 4),
                             "calls": phase.calls, "input_tokens": phase.input_tokens,
                             "cached_tokens": phase.cacheable_tokens, "output_tokens": phase.output_tokens,
                             **{f"usd_live_{round(d * 100)}off": round(row_money[d].scaled(n).money_usd, 2)
                                for d in CACHE_DISCOUNTS},
                             "usd_batch_50off": round(phase.money_usd * 0.5, 2)})
    return rows


def with_sample_passages(turn_items, documents: Path, chars: int) -> list:
    """2c turns whose passages after the gold ones are real RECOR documents of the organizers'
    sample release, cut to ``chars`` characters (the sample's median length is ~1,700)."""
    texts = []
    with open(documents, encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            texts.append((record["doc_id"], record["content"][:chars]))
    out = []
    for i, item in enumerate(turn_items):
        others = [texts[(i * 4 + k) % len(texts)] for k in range(5 - len(item.gold_evidence))]
        out.append(dataclasses.replace(item, evidence=(*item.gold_evidence, *others)))
    return out


def main() -> int:
    os.environ.setdefault("OPENAI_API_KEY", "sk-local-llama-server")  # llama-server checks no key
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--subtrack", choices=("2b", "2c"), default="2c")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--context", type=int, default=16384,
                        help="the server's context (-c); the tiny model's own is 16,384 tokens, the most the server gives it")
    parser.add_argument("--llama-cpp", type=Path, default=SHARED / "tools" / "llama.cpp")
    parser.add_argument("--documents", type=Path,
                        default=SHARED / "data" / "reteco_sample" / "track2_recor" / "documents.jsonl",
                        help="with --sample-passages: the sample release's RECOR documents")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--order", default="2,3,3,2",
                        help="the versions' runs, in order (default 2,3,3,2: each version once early and once late, so "
                        "a change in the machine's load falls on both alike); the ratios are of the sums")
    parser.add_argument("--table", action="store_true", help="print the cost table (estimate only, no server)")
    parser.add_argument("--sample-passages", type=int, metavar="CHARS",
                        help="2c: fill the five passages with the sample release's RECOR documents cut to CHARS characters")
    args = parser.parse_args()
    if args.table:
        for row in cost_table(200, [1, 50, 180]):
            print(json.dumps(row))
        return 0
    turns = golden_turns(args.subtrack)[:args.turns]
    if args.sample_passages:
        turns = with_sample_passages(turns, args.documents, args.sample_passages)
    items = every_dimension(turns)
    results = [run(int(v), items, args.llama_cpp, args.threads, args.context) for v in args.order.split(",")]
    failed = [r for r in results if r["statuses"]["error"]]
    if failed:  # a prompt longer than the context fails: the versions would not be compared on the same items
        print(f"{len(failed)} runs had failed judgments (a prompt longer than --context {args.context}?): "
              "the ratios compare different work", file=sys.stderr)

    def total(version: int, key: str) -> float:
        return sum(r[key] for r in results if r["version"] == version)

    versions = sorted({r["version"] for r in results})
    summary = {"turns": args.turns, "subtrack": args.subtrack, "threads": args.threads,
               "sample_passages": args.sample_passages, "order": args.order, "runs": results,
               **{f"{key}_v{v}_over_v2": round(total(v, key) / total(2, key), 3)
                  for v in versions if v != 2 for key in ("prompt_ms", "prompt_n", "wall_s")
                  if total(2, key) and total(v, key)}}
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
