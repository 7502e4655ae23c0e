"""What one `reteco judge-meta` run costs, per golden set version: requests, tokens, money, time.

The gate is run once per judge configuration (and again by `judge-compare` for each config it
compares), so its cost is part of choosing a judge. Golden v5 (issue 33) has 2,640 graded cases
against v3's 550; this prints what that costs before anyone pays for it. Nothing is sent: it is
`reteco.workbench.judge_audit.estimate.estimate_judging` on the requests `judge-meta` would build
(every case, plus the bias probes), with OpenAI's caching rule (prefixes of 1,024 tokens or more,
in steps of 128), the rule-of-thumb token count (ASCII characters / 4) and the expected completion
length the estimate uses.

    .venv/bin/python bench/bench_golden_gate_cost.py                # versions 3, 4, 5, prompt version each is graded for
    .venv/bin/python bench/bench_golden_gate_cost.py --versions 5 --json out.json

Prices: gpt-4o-2024-08-06's list prices ($2.50 input, $1.25 cached input, $10 output per million
tokens), the plan's judge; the packaged gpt-5.5 has no prices in its config. The two money
columns are every cacheable token a cache hit, and none.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from bench_judge_cost import GPT_4O_PRICES  # bench/ is on sys.path: this script's folder

from reteco.judge import load_judge_config
from reteco.judge.config import PLAN_GPT4O_CONFIG
from reteco.judge.prompts import load_prompt_set
from reteco.workbench.judge_audit.estimate import OPENAI_CACHE_MIN_TOKENS, estimate_judging
from reteco.workbench.judge_audit.golden import golden_prompt_version, load_golden_set
from reteco.workbench.judge_audit.meta_contrasts import REJUDGED, has_contrasts, probe_items


def gate_cost(version: int) -> dict:
    """The estimate of one `judge-meta --golden-version VERSION` run with the plan's gpt-4o config
    on the prompt version the set is graded for, at gpt-4o's prices."""
    prompt_version = golden_prompt_version(version)
    base = load_judge_config(PLAN_GPT4O_CONFIG)
    config = dataclasses.replace(base, prompt_version=prompt_version, prompts=load_prompt_set(prompt_version),
                                 price_per_million=GPT_4O_PRICES)
    cases = load_golden_set(version)
    probes = probe_items(cases) if has_contrasts(cases) else []
    # The re-judging probe asks its cases again through a second cache (a fresh verdict, paid again):
    # the estimate counts identical requests once, so those are a second estimate of their own.
    first = estimate_judging([c.item for c in cases] + [p.item for p in probes if p.kind != REJUDGED], config,
                             min_cached_tokens=OPENAI_CACHE_MIN_TOKENS)
    again = estimate_judging([p.item for p in probes if p.kind == REJUDGED], config,
                             min_cached_tokens=OPENAI_CACHE_MIN_TOKENS)
    low, high = first.hours()
    more_low, more_high = again.hours()
    return {"golden_version": version, "prompt_version": prompt_version, "cases": len(cases), "probes": len(probes),
            "calls": first.calls + again.calls, "input_tokens": first.input_tokens + again.input_tokens,
            "cacheable_tokens": first.cacheable_tokens + again.cacheable_tokens,
            "output_tokens": first.output_tokens + again.output_tokens,
            "usd_cache_hits": round(first.money_usd + again.money_usd, 2),
            "usd_no_cache_hit": round(first.money_no_cache_usd + again.money_no_cache_usd, 2),
            "minutes_at_concurrency": [round((low + more_low) * 60, 1), round((high + more_high) * 60, 1)],
            "concurrency": first.concurrency}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", default="3,4,5", help="golden set versions, comma-separated (default 3,4,5)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = parser.parse_args()
    rows = [gate_cost(int(v)) for v in args.versions.split(",")]
    print("| golden | prompt | cases | probes | requests | input tokens (cacheable) | output tokens | "
          "gpt-4o, cache hits | no cache hit | minutes at concurrency 16 |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print(f"| v{r['golden_version']} | {r['prompt_version']} | {r['cases']:,} | {r['probes']:,} | {r['calls']:,} | "
              f"{r['input_tokens']:,} ({r['cacheable_tokens']:,}) | {r['output_tokens']:,} | ${r['usd_cache_hits']:.2f} | "
              f"${r['usd_no_cache_hit']:.2f} | {r['minutes_at_concurrency'][0]:g}-{r['minutes_at_concurrency'][1]:g} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
