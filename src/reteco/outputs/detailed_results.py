"""``detailed_results.html``: what Codabench shows under a submission (``enable_detailed_results``).

One self-contained page per scored submission, written for the participant who submitted it:

- the official figure as the headline, with its definition from ``reteco.subtracks`` (2b has no
  official figure: the page says so and puts the judge mean there, or why it is absent), and
  every leaderboard key that is absent, each distinct reason said once;
- the warnings about the submission, then the leaderboard figures with their meanings;
- charts (``reteco.outputs.charts``): per-domain bars with the overall mean marked; Track 2 the
  turn-depth curve T1..T5+; Track 1 the temporal panel (TP, TR, TC, nDCG|FC, fully covered
  queries, where the temporal labels come from); 2b/2c the five judge dimensions with their
  valid/invalid/failed/no-answer counts and the judge's signature, and the text metrics per
  domain and per depth;
- how the submission was read (the deterministic-handling counts, each with what it means);
- per-topic tables only when the phase allows them (``phase["per_topic"]``); otherwise the page
  is aggregate-only and says so once.

The page holds no script, loads nothing (no font, image or style by URL: it may be opened
offline, and Codabench shows it in a frame), escapes every text (file names, messages and
topic ids come from the participant), and fits a 390 px phone and a 1280 px screen without
scrolling sideways: long tables scroll inside their own box. It shows only what ``details``
holds, and ``details`` holds only what the participant's phase allows: once the competition is
published the page may be public. It never shows reference data (gold ids, reference answers,
passages); judge rationales stay in details.json.
"""

from __future__ import annotations

import html
import math
from typing import Any, Iterable

from reteco.outputs.charts import Bar, Point, bar_chart, depth_curve, number
from reteco.subtracks import DIMENSIONS, JUDGE, JUDGE_MEAN, KEYS, SUBTRACKS, TEMPORAL, TEXT, SubTrack

MAX_ROWS = 5000  # per-topic rows shown; the full list stays in details.json
MAX_MESSAGES_UNBOXED = 8  # more warnings than this scroll in their own box

WITHHELD = (
    "Per-topic figures are withheld in this phase: on hidden labels they would reveal them through "
    "repeated submissions. This page shows aggregate figures only."
)

# What each deterministic-handling count means for the participant (details["counts"] of a run,
# details["generation"]["answers"] and ["evidence"] of 2b/2c answers). A count a scorer adds
# must get its line here (tests/test_detailed_results_page.py checks every count the scorers write).
COUNT_MEANINGS = {
    "lines_read": "lines of your file that were read",
    "topics_in_run": "distinct topic ids in your run",
    "topics_ignored": "topic ids that are not topics of this sub-track: their lines were ignored (check the ids)",
    "lines_ignored_topic": "lines of those unknown topic ids, ignored",
    "doc_ids_remapped": "v1.0 document ids mapped to their v1.1 id through the duplicate map (nothing to fix)",
    "unknown_doc_ids": "lines whose document id is not in the topic's domain corpus: discarded, as if absent",
    "topics_rank_score_disagree": "topics whose rank column disagrees with the scores: the ranking follows the scores",
    "duplicate_doc_ids": "lines repeating a document already ranked for the topic: removed after the first",
    "topics_missing": "reference topics your run does not rank: each scores 0 and counts in the mean",
    "rows_ranked": "lines kept and ranked after these rules",
    "answers": "answers accepted, one per reference turn",
    "turns_ignored": "turn ids that are not target turns of this sub-track: ignored (check the ids)",
    "lines_extra_fields": "lines with fields other than turn_id and answer: the extra fields were ignored",
    "turns_missing": "reference turns without an answer: each scores 0 on every measure and counts",
    "passages_given": "passages given to the judge as evidence, over the answered turns",
    "passages_without_text": "evidence documents without passage text: not shown to the judge",
    "answered_turns_without_evidence": "answered turns judged with no evidence passage at all",
    "k": "the number of top documents of your run that are the evidence of a turn",
    "gold_passages_given": "the turns' gold passages given to the judge for correctness and completeness",
    "gold_passages_without_text": "gold passages without text in the reference data: not shown to the judge",
}
# Counts that, above 0, mean something in the submission probably needs fixing.
PROBLEM_COUNTS = frozenset({
    "topics_ignored", "lines_ignored_topic", "unknown_doc_ids", "topics_rank_score_disagree", "duplicate_doc_ids",
    "topics_missing", "turns_ignored", "lines_extra_fields", "turns_missing", "passages_without_text",
    "answered_turns_without_evidence",
})  # fmt: skip

# Column titles of the per-topic and per-domain tables for fields that are not score keys
# (score keys take their title from reteco.subtracks).
COLUMN_TITLES = {
    "unit": None,  # the sub-track's unit: "Query" or "Turn"
    "step": "Step",
    "query": "Query",
    "turn": "Turn",
    "domain": "Domain",
    "depth": "Depth",
    "topics": "Steps",
    "units": None,  # "queries" / "turns"
    "turns": "Turns",
    "queries": "Queries",
    "required_periods": "Required periods",
    "covered_periods": "Covered periods",
    "fully_covered": "Fully covered",
    "fully_covered_queries": "Fully covered queries",
    "queries_with_required_periods": "Queries with periods",
    "own_period_covered": "Own period covered",
    "unlabelled_top10": "Unlabelled in top 10",
    "answered": "Answered",
    "answer_line": "Answer line",
    "evidence_passages": "Evidence passages",
}
SKIPPED_COLUMNS = frozenset({"evidence_doc_ids", "judgments"})  # lists and rationales stay in details.json

_STYLE = """
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%;text-size-adjust:100%}
body{margin:0;background:#f4f5f7;color:#1d232a;
 font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1060px;margin:0 auto;padding:14px 12px 28px}
h1{font-size:1.45rem;margin:.1em 0 .2em;line-height:1.2}
h2{font-size:1.12rem;margin:0 0 .55em}
h3{font-size:1rem;margin:1em 0 .4em}
p,li,dd,figcaption{overflow-wrap:anywhere}
td{overflow-wrap:break-word}
td.group{white-space:nowrap}
.kicker{font-size:.8rem;letter-spacing:.04em;text-transform:uppercase;color:#5b6672;margin:0}
.card{background:#fff;border:1px solid #dce0e5;border-radius:8px;padding:14px 16px;margin:12px 0}
.headline .label{font-size:.95rem;color:#3d4750;margin:0}
.headline .value{font-size:3rem;font-weight:700;line-height:1.1;margin:.05em 0 .1em;
 font-variant-numeric:tabular-nums;color:#12324f}
.headline .value.none{font-size:1.6rem;color:#8a4b00}
.note{background:#fff8e6;border-left:4px solid #e0a526;padding:.45em .7em;margin:.6em 0}
.absent{color:#8a4b00}
.muted{color:#5b6672}
.problem{color:#a3281d;font-weight:600}
ul.absent-list{margin:.4em 0 0;padding-left:1.2em}
ul.messages{margin:.3em 0;padding-left:1.2em}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,330px),1fr));gap:8px 28px;align-items:start}
figure{margin:.4em 0 .8em}
figcaption{font-weight:600;font-size:.92rem;margin-bottom:.2em}
figure svg{display:block;width:100%;max-width:440px;height:auto}
.box{overflow:auto;border:1px solid #e3e6ea;border-radius:6px;margin:.4em 0 .8em}
.box.tall{max-height:26rem}
table{border-collapse:collapse;min-width:100%;font-size:.88rem}
th,td{padding:.3em .55em;border-bottom:1px solid #eceff2;text-align:left;vertical-align:top}
thead th{position:sticky;top:0;background:#eef1f4;z-index:1}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
th.n{text-align:right}
.meaning{color:#3d4750;font-size:.92em}
code{font-size:.92em;overflow-wrap:anywhere}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.15em .8em;margin:.4em 0}
dl.facts dt{color:#5b6672}
dl.facts dd{margin:0}
details summary{cursor:pointer;font-weight:600}
footer{font-size:.82rem;color:#5b6672;margin-top:14px}
@media (max-width:480px){main{padding:10px 8px 24px}.card{padding:12px}.headline .value{font-size:2.6rem}
 dl.facts{grid-template-columns:1fr}dl.facts dd{margin-bottom:.3em}}
"""


def render(
    *,
    subtrack: str | None,
    phase: dict,
    scores: dict[str, float] | None = None,
    details: dict | None = None,
    absent: dict[str, str] | None = None,
    messages: list[str] | None = None,
    failed: bool = False,
    max_rows: int = MAX_ROWS,
) -> str:
    """The page for a scored submission, or (``failed``) for one that could not be scored.

    ``scores``: scores.json; ``details``: details.json as the phase allows it (per-topic sections
    are shown only when ``phase["per_topic"]`` is true, whatever ``details`` holds); ``absent``:
    why each leaderboard key missing from ``scores`` is absent (the scoring program's
    ``absent_scores``; a key without one takes the scorer's own reason from ``details``);
    ``messages``: the warnings of the log (default: ``details["warnings"]``), or with ``failed``
    the errors. ``max_rows``: per-topic rows shown per table.
    """
    row = SUBTRACKS.get(subtrack) if subtrack else None
    phase, details = _dict(phase), _dict(details)
    if messages is None:
        messages = [m for m in details.get("warnings") or [] if isinstance(m, str)]
    title = row.name if row else (subtrack or "unknown sub-track")
    out = [_head(title), _header(title, phase, details, failed)]
    if failed:
        out.append(_refusal(row, messages))
        return "".join(out) + "</main></body></html>"

    scores = {k: v for k, v in (scores or {}).items() if _finite(v)}
    keys = list(row.keys) if row else list(scores)
    reasons = _absent_reasons(keys, scores, absent or {}, details)
    notes = _notes(reasons)
    out.append(_headline(row, keys, scores, notes))
    out.append(_warnings(messages, set(reasons)))
    out.append(_leaderboard(row, keys, scores, notes))
    generation = details.get("generation") if isinstance(details.get("generation"), dict) else None
    if isinstance(details.get("overall"), dict):
        out.append(_retrieval_section(row, details))
    if isinstance(details.get("temporal"), dict):
        out.append(_temporal_section(details["temporal"]))
    if generation is not None:
        out.append(_judge_section(generation, notes))
        out.append(_text_metrics_section(generation, notes))
    out.append(_handling_section(details, generation))
    if phase.get("per_topic"):
        out.append(_per_topic_section(row, details, generation, max_rows))
    out.append(_footer(details))
    return "".join(out) + "</main></body></html>"


# ---------------------------------------------------------------------------------------------
# Frame


def _head(title: str) -> str:
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>RETECO detailed results: {_e(title)}</title><style>{_STYLE}</style></head><body><main>"
    )


def _header(title: str, phase: dict, details: dict, failed: bool) -> str:
    name = phase.get("name") or phase.get("phase") or "unknown"
    split = phase.get("split")
    where = f"Phase <b>{_e(name)}</b>" + (f" ({_e(split)} split)" if split and split != "?" else "")
    if failed:
        policy = ""
    elif phase.get("per_topic"):
        policy = " Per-topic figures are shown at the end of this page."
    else:
        policy = " " + WITHHELD
    files = _dict(details.get("submission"))
    scored = [files[k] for k in ("run_file", "answers_file") if isinstance(files.get(k), str)]
    scored_line = f"<p class='muted'>Scored: {', '.join(_e(f) for f in scored)}</p>" if scored else ""
    return (
        "<header><p class='kicker'>RETECO · SemEval-2027 Task 1 · detailed results</p>"
        f"<h1>{_e(title)}</h1><p>{where}.{_e_text(policy)}</p>{scored_line}</header>"
    )


def _refusal(row: SubTrack | None, messages: list[str]) -> str:
    where = f"--ref ref/{row.id}" if row else "--ref ref/SUBTRACK"
    items = "".join(f"<li>{_e(m)}</li>" for m in messages) or "<li>no message was recorded</li>"
    box = " class='box tall'" if len(messages) > MAX_MESSAGES_UNBOXED else ""
    return (
        "<section class='card' id='refusal'><h2 class='problem'>The submission could not be scored</h2>"
        f"<div{box}><ul class='messages'>{items}</ul></div>"
        "<h3>What to do</h3><p>Each message names the file and, where it applies, the line. Fix what they "
        "say, check the submission locally with the scoring program's own rules "
        f"(<code>reteco validate {_e(where)} SUBMISSION</code> from the starting kit), and submit again. "
        "A submission that could not be scored does not appear on the leaderboard.</p></section>"
    )


def _footer(details: dict) -> str:
    scorer = _dict(details.get("scorer"))
    reference = _dict(details.get("reference"))
    engine = f", {scorer['engine']} engine" if scorer.get("engine") else ""
    return (
        f"<footer>Scored by reteco {_e(scorer.get('version', '?'))}{_e(engine)} against reference "
        f"{_e(reference.get('fingerprint', '?'))}. Every figure of this page is in details.json.</footer>"
    )


# ---------------------------------------------------------------------------------------------
# Headline, absent keys, warnings, leaderboard


def _absent_reasons(keys: list[str], scores: dict, absent: dict[str, str], details: dict) -> dict[str, str]:
    """Why each key missing from ``scores`` is absent: the caller's reason, else the scorer's."""
    generation = _dict(details.get("generation"))
    judge = _dict(generation.get("judge"))
    text = _dict(generation.get("text_metrics"))
    temporal = _dict(details.get("temporal"))
    out = {}
    for key in keys:
        if key in scores:
            continue
        reason = absent.get(key)
        if not (isinstance(reason, str) and reason.strip()):
            reason = None
            if key in JUDGE and judge.get("ran") is False and judge.get("reason"):
                reason = f"the judge did not run: {judge['reason']}"
            elif key == JUDGE_MEAN and judge.get("judge_mean_left_out"):
                reason = judge["judge_mean_left_out"]
            elif key in text and isinstance(text[key], dict) and text[key].get("reason"):
                reason = text[key]["reason"]
            elif temporal.get(f"{key}_status"):
                reason = temporal[f"{key}_status"]
        out[key] = reason if isinstance(reason, str) else "not computed (no reason was recorded)"
    return out


def _notes(reasons: dict[str, str]) -> list[tuple[str, str, list[str]]]:
    """Absent keys grouped by their reason: (letter, reason, keys), in key order."""
    grouped: dict[str, list[str]] = {}
    for key, reason in reasons.items():
        grouped.setdefault(reason, []).append(key)
    return [(chr(ord("a") + i), reason, keys) for i, (reason, keys) in enumerate(grouped.items())]


def _letter(notes, key: str) -> str:
    return next((letter for letter, _, keys in notes if key in keys), "")


def _headline(row: SubTrack | None, keys: list[str], scores: dict, notes) -> str:
    official = row.official if row else (keys[0] if keys else None)
    out = ["<section class='card headline' id='headline'>"]
    if row is not None and row.official is None:
        out.append(
            f"<p class='note'>Sub-track {_e(row.id)} has no official figure: its leaderboard is not ranked. "
            f"The headline is the {_e(KEYS[JUDGE_MEAN].title)}.</p>"
        )
        official = JUDGE_MEAN
    if official is not None:
        title = KEYS[official].title if official in KEYS else official
        kind = "Official figure" if row is not None and row.official == official else "Headline figure"
        out.append(f"<p class='label'>{kind}: <b>{_e(title)}</b></p>")
        if official in scores:
            out.append(f"<p class='value' id='headline-value'>{number(scores[official])}</p>")
        else:
            out.append(
                f"<p class='value none' id='headline-value'>absent ({_letter(notes, official)})</p>"
            )
        if official in KEYS:
            unit = f"; {row.unit}" if row else ""
            ranks = " The leaderboard ranks by this figure." if kind == "Official figure" else ""
            out.append(f"<p>What it measures: {_e(KEYS[official].meaning)}{_e(unit)}.{ranks}</p>")
    if notes:
        items = "".join(
            f"<li id='absent-{letter}'>({letter}) <b>{_e(', '.join(_title(k) for k in keys))}</b>: "
            f"<span class='absent'>absent: {_e(reason)}</span></li>"
            for letter, reason, keys in notes
        )
        out.append(f"<p class='label'>Not in your scores:</p><ul class='absent-list'>{items}</ul>")
    out.append("</section>")
    return "".join(out)


def _warnings(messages: list[str], absent_keys: set[str]) -> str:
    shown = [m for m in messages if not _said_with_absent_keys(m, absent_keys)]
    if not shown:
        return ""
    items = "".join(f"<li>{_e(m)}</li>" for m in shown)
    box = " class='box tall'" if len(shown) > MAX_MESSAGES_UNBOXED else ""
    return (
        f"<section class='card' id='warnings'><h2>Warnings about your submission ({len(shown)})</h2>"
        f"<div{box}><ul class='messages'>{items}</ul></div></section>"
    )


def _said_with_absent_keys(message: str, absent_keys: set[str]) -> bool:
    """A log line that only restates why a key is absent (its reason is under the headline).

    The generation scorer's two notes (``reteco.scoring.generation``): "judge: warning: the
    judge did not run: ..." and "metrics: warning: <key> is not reported: ...".
    """
    if message.startswith(("judge: warning: the judge did not run:", "judge: warning: the judge did not finish:")):
        return bool(absent_keys & set(JUDGE))
    for key in TEXT:
        if message.startswith(f"metrics: warning: {key} is not reported:"):
            return key in absent_keys
    return False


def _leaderboard(row: SubTrack | None, keys: list[str], scores: dict, notes) -> str:
    rows = []
    for key in keys:
        official = row is not None and key == row.official
        name = f"<b>{_e(_title(key))}</b>" + (" <span class='muted'>(official)</span>" if official else "")
        if key in scores:
            value = f"<td class='n'>{number(scores[key])}</td>"
        else:
            value = f"<td class='n absent'>absent ({_letter(notes, key)})</td>"
        rows.append((name, KEYS[key].meaning if key in KEYS else "", value))
    for key in sorted(set(scores) - set(keys)):
        value = f"<td class='n'>{number(scores[key])}</td>"
        rows.append((f"<b>{_e(_title(key))}</b>", "not a leaderboard column", value))
    return (
        "<section class='card' id='leaderboard'><h2>Leaderboard figures</h2>"
        + _described_table("Figure: what it measures", "Value", rows)
        + "</section>"
    )


def _described_table(first: str, second: str, rows: list[tuple[str, str, str]]) -> str:
    """Rows of (name as HTML, its meaning as text, the value's ``<td>``): the meaning under the
    name, so the value column stays beside it at any width."""
    body = "".join(
        f"<tr><td>{name}" + (f"<br><span class='meaning'>{_e(meaning)}</span>" if meaning else "")
        + f"</td>{value}</tr>"
        for name, meaning, value in rows
    )
    return (
        f"<div class='box'><table><thead><tr><th>{_e(first)}</th><th class='n'>{_e(second)}</th></tr></thead>"
        f"<tbody>{body}</tbody></table></div>"
    )


# ---------------------------------------------------------------------------------------------
# Retrieval: per domain, turn depth


def _retrieval_section(row: SubTrack | None, details: dict) -> str:
    key = row.official if row and row.official else next(iter(details["overall"]), None)
    if key is None:
        return ""
    units = _unit_word(row)
    per_domain = _dict(details.get("per_domain"))
    per_depth = _dict(details.get("per_depth"))
    out = ["<section class='card' id='retrieval'><h2>Retrieval</h2>"]
    out.append(f"<div class='grid'>{_group_charts(details, key, 'units', units)}</div>")
    if isinstance(details.get("step_mean"), dict):
        step_mean = details["step_mean"]
        figures = ", ".join(f"{_e(_title(k))} {number(_num(v))}" for k, v in step_mean.items() if k in KEYS)
        out.append(f"<p class='muted'>Mean over all steps (not a leaderboard figure): {figures}.</p>")
    candidates = row.keys if row else details["overall"]
    metric_keys = [k for k in candidates if k in details["overall"] or _in_groups(k, per_domain)]
    out.append(_group_table(
        "Per domain", per_domain, metric_keys, units,
        extra_rows=[("All (mean over " + units + ")", details["overall"] | _temporal_overall(details)),
                    ("Domain macro", (details.get("domain_macro") or {}) | _temporal_macro(details))],
        first="Domain",
    ))  # fmt: skip
    if per_depth:
        out.append(_group_table("Per turn depth", per_depth, metric_keys, units, first="Depth"))
    out.append("</section>")
    return "".join(out)


def _temporal_overall(details: dict) -> dict:
    temporal = _dict(details.get("temporal"))
    return _dict(temporal.get("overall"))


def _temporal_macro(details: dict) -> dict:
    temporal = _dict(details.get("temporal"))
    macro = _dict(temporal.get("domain_macro"))
    return {k: v for k, v in macro.items() if k in KEYS}


def _in_groups(key: str, groups: dict) -> bool:
    return any(isinstance(f, dict) and key in f for f in groups.values())


# ---------------------------------------------------------------------------------------------
# Track 1: temporal diagnostics


def _temporal_section(temporal: dict) -> str:
    overall = _dict(temporal.get("overall"))
    bars = [Bar(_title(k), _num(overall.get(k))) for k in TEMPORAL]
    chart = bar_chart("Temporal diagnostics at 10, mean over queries", bars, missing_text="absent (see the headline)")
    facts = []
    queries = _int(temporal.get("queries"))
    fully = _int(temporal.get("fully_covered_queries"))
    if fully is not None and queries is not None:
        facts.append(("Fully covered queries", f"{fully} of {queries} (the queries {_title('ndcg_fc_10')} averages)"))
    with_periods = _int(temporal.get("queries_with_required_periods"))
    without = _int(temporal.get("queries_without_required_periods"))
    if with_periods is not None:
        text = f"{with_periods} queries, {_int(temporal.get('required_periods')) or 0} periods"
        if without:
            text += f"; {without} queries without a required period are left out of {_title('tc_10')}"
        facts.append(("Required time periods", text))
    facts.append(("Temporal labels", _label_source(temporal)))
    if isinstance(temporal.get("coverage_over"), str):
        facts.append(("Coverage over", temporal["coverage_over"]))
    unlabelled = temporal.get("unlabelled_top10")
    if isinstance(unlabelled, dict) and _int(unlabelled.get("documents")) is not None:
        facts.append((
            "Unlabelled documents",
            f"{unlabelled.get('unlabelled', 0)} of {unlabelled['documents']} distinct top-10 documents "
            f"(in {unlabelled.get('queries_with_unlabelled', 0)} queries) have no temporal label: "
            "they count as not temporally relevant",
        ))  # fmt: skip
    step_mean = _dict(temporal.get("step_mean"))
    if step_mean:
        parts = ", ".join(f"{_title(k)} {number(_num(step_mean[k]))}" for k in TEMPORAL if k in step_mean)
        share = _num(step_mean.get("own_period_covered_share"))
        own = (
            f"; a step's own period is covered by its own top 10 in {share:.1%} of "
            f"{step_mean.get('steps_with_own_period')} steps" if share is not None else ""
        )
        facts.append(("Mean over steps", f"{parts} (not leaderboard figures){own}"))
    return (
        "<section class='card' id='temporal'><h2>Temporal diagnostics</h2><div class='grid'>"
        f"{_figure('Temporal diagnostics at 10 (mean over queries)', chart)}"
        f"<div>{_facts(facts)}</div></div></section>"
    )


def _label_source(temporal: dict) -> str:
    source = temporal.get("source")
    description = temporal.get("source_description")
    if source == "frozen":
        labels = _dict(temporal.get("labels"))
        name = "frozen labels" + (f" (content hash {labels['content_hash']})" if labels.get("content_hash") else "")
    elif source == "oracle":
        oracle = _dict(temporal.get("oracle"))
        name = "offline oracle" if oracle.get("periods_file") else "qrels fallback"
    else:
        name = str(source or "unknown")
    if not isinstance(description, str) or not description:
        return name
    return f"{name}. {description[0].upper()}{description[1:]}."


# ---------------------------------------------------------------------------------------------
# 2b/2c: the judge and the text metrics


def _judge_section(generation: dict, notes) -> str:
    judge = _dict(generation.get("judge"))
    out = ["<section class='card' id='judge'><h2>LLM judge</h2>"]
    who = []
    for name, label in (("model", "Model"), ("prompt_version", "Prompt version"), ("signature", "Judge signature")):
        if judge.get(name) is not None:
            who.append((label, str(judge[name])))
    if judge.get("ran"):
        per_dimension = _dict(judge.get("per_dimension"))
        overall = _dict(generation.get("overall"))
        bars = [Bar(_title(d), _num((per_dimension.get(d) or {}).get("mean"))) for d in DIMENSIONS]
        chart = bar_chart(
            "The five judge dimensions (0-1)", bars, mean=_num(overall.get(JUDGE_MEAN)), mean_label="judge mean",
            missing_text="no valid judgment",
        )  # fmt: skip
        calls = _dict(judge.get("calls"))
        if calls:
            who.append(("Judgments", f"{calls.get('judgments', 0)} ({calls.get('cached', 0)} from the cache, "
                                     f"{calls.get('new', 0)} new)"))  # fmt: skip
        if judge.get("system_fingerprints"):
            who.append(("System fingerprints", ", ".join(map(str, judge["system_fingerprints"]))))
        out.append(f"<div class='grid'>{_figure('The five judge dimensions (normalized (s - 1) / 4)', chart)}")
        out.append(f"<div>{_facts(who)}</div></div>")
        rows = []
        for d in DIMENSIONS:
            f = _dict(per_dimension.get(d))
            counts = ("valid", "invalid", "error", "missing_answer")
            cells = "".join(f"<td class='n'>{_e(f.get(c, '—'))}</td>" for c in counts)
            mean = number(_num(f.get("mean")), "no valid judgment")
            rows.append(f"<tr><td>{_e(_title(d))}</td><td class='n'>{mean}</td>{cells}"
                        f"<td class='n'>{_e(f.get('turns_averaged', '—'))}</td></tr>")  # fmt: skip
        out.append(
            "<div class='box'><table><thead><tr><th>Dimension</th><th class='n'>Mean</th><th class='n'>Valid</th>"
            "<th class='n'>Invalid</th><th class='n'>Failed</th><th class='n'>No answer (scores 0)</th>"
            "<th class='n'>Turns averaged</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>"
        )
        charts = _group_charts(generation, JUDGE_MEAN, "turns", "turns")
        if charts:
            out.append(f"<div class='grid'>{charts}</div>")
    else:
        letter = _letter(notes, JUDGE_MEAN) or _letter(notes, DIMENSIONS[0])
        why = f" (the reason is under the headline, note {letter})" if letter else ""
        out.append(f"<p>The judge did not run for this submission: the five dimensions have no figures{why}.</p>")
        if who:
            out.append(f"<p class='label muted'>The judge that scores this sub-track:</p>{_facts(who)}")
    out.append("</section>")
    return "".join(out)


def _text_metrics_section(generation: dict, notes) -> str:
    metrics = _dict(generation.get("text_metrics"))
    overall = _dict(generation.get("overall"))
    macro = _dict(generation.get("domain_macro"))
    rows = []
    charts = []
    settings_list = []
    for name in [k for k in TEXT if k in metrics] + [k for k in metrics if k not in TEXT]:
        info = metrics[name] if isinstance(metrics[name], dict) else {}
        if info.get("available"):
            settings = _dict(info.get("settings"))
            how = ", ".join(f"{k} {v}" for k, v in settings.items())
            settings_list.append(f"<li><b>{_e(_title(name))}</b>: {_e(how)}</li>")
            rows.append(
                f"<tr><td><b>{_e(_title(name))}</b></td><td class='n'>{number(_num(overall.get(name)))}</td>"
                f"<td class='n'>{number(_num(macro.get(name)))}</td>"
                f"<td class='n'>{_e(info.get('turns_averaged', '—'))}</td></tr>"
            )
            charts.append(_group_charts(generation, name, "turns", "turns"))
        else:
            letter = _letter(notes, name)
            rows.append(
                f"<tr><td><b>{_e(_title(name))}</b></td><td class='n absent' colspan='3'>absent ({letter})</td></tr>"
            )
    if not rows:
        return ""
    keys = _generation_keys(generation)
    return (
        "<section class='card' id='text-metrics'><h2>Text metrics against the reference answers</h2>"
        "<div class='box'><table><thead><tr><th>Metric</th><th class='n'>All turns</th>"
        "<th class='n'>Domain macro</th><th class='n'>Turns averaged</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
        + (f"<ul class='meaning'>{''.join(settings_list)}</ul>" if settings_list else "")
        + f"<div class='grid'>{''.join(charts)}</div>"
        + _group_table(
            "Per domain", _dict(generation.get("per_domain")), keys, "turns", first="Domain",
            extra_rows=[("All (mean over turns)", overall), ("Domain macro", macro)],
        )
        + _group_table("Per turn depth", _dict(generation.get("per_depth")), keys, "turns", first="Depth")
        + "</section>"
    )


def _generation_keys(generation: dict) -> list[str]:
    groups = [f for section in ("per_domain", "per_depth") for f in (generation.get(section) or {}).values()]
    present = {k for f in groups if isinstance(f, dict) for k in f}
    return [k for k in (*TEXT, *DIMENSIONS, JUDGE_MEAN) if k in present]


def _group_charts(figures: dict, key: str, count_field: str, units: str) -> str:
    """The per-domain bars and the turn-depth curve of one figure, each with the overall mean.

    ``figures``: a section with ``overall``, ``per_domain`` and ``per_depth`` (the retrieval
    details, or ``details["generation"]``); ``count_field``: where a group's unit count is.
    """
    overall = _num(_dict(figures.get("overall")).get(key))
    title = _title(key)
    out = []
    per_domain = _dict(figures.get("per_domain"))
    if per_domain:
        bars = [Bar(d, _num(f.get(key)), _int(f.get(count_field))) for d, f in per_domain.items() if _dict(f)]
        out.append(_figure(
            f"{title} per domain (the line: mean over all {units})",
            bar_chart(f"{title} per domain", bars, mean=overall, count_word=units),
        ))  # fmt: skip
    per_depth = _dict(figures.get("per_depth"))
    if per_depth:
        points = [Point(g, _num(f.get(key)), _int(f.get(count_field))) for g, f in per_depth.items() if _dict(f)]
        out.append(_figure(
            f"{title} by turn depth (T5+: turn 5 and later)",
            depth_curve(f"{title} by turn depth", points, mean=overall, count_word=units),
        ))  # fmt: skip
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# How the submission was read


def _handling_section(details: dict, generation: dict | None) -> str:
    groups = []
    if isinstance(details.get("counts"), dict):
        groups.append(("Your run", details["counts"]))
    if generation is not None:
        if isinstance(generation.get("answers"), dict):
            groups.append(("Your answers", generation["answers"]))
        if isinstance(generation.get("evidence"), dict):
            groups.append(("The judge's evidence", generation["evidence"]))
    out = []
    for title, counts in groups:
        rows = []
        for name, value in counts.items():
            if isinstance(value, bool) or not isinstance(value, int):
                continue
            css = " problem" if name in PROBLEM_COUNTS and value > 0 else ""
            rows.append((f"<code>{_e(name)}</code>", COUNT_MEANINGS.get(name, ""), f"<td class='n{css}'>{value}</td>"))
        source = counts.get("source") if isinstance(counts.get("source"), str) else None
        lead = f"<p class='muted'>Evidence: {_e(source)}.</p>" if source else ""
        out.append(f"<h3>{_e(title)}</h3>{lead}" + _described_table("Count: what it means", "Value", rows))
    submission = _dict(details.get("submission"))
    ignored = [str(f) for f in submission.get("ignored") or []]
    if ignored:
        out.append(f"<p>Files in your submission that were not read: {_e(', '.join(ignored))}.</p>")
    rules = [r for r in (details.get("rules") or []) if isinstance(r, str)]
    if generation is not None:
        rules += [r for r in (generation.get("rules") or []) if isinstance(r, str)]
    if rules:
        items = "".join(f"<li>{_e(r)}</li>" for r in rules)
        out.append(f"<details><summary>The scoring rules ({len(rules)})</summary><ul>{items}</ul></details>")
    if not out:
        return ""
    return "<section class='card' id='handling'><h2>How your submission was read</h2>" + "".join(out) + "</section>"


# ---------------------------------------------------------------------------------------------
# Per-topic tables (phases that allow them)


def _per_topic_section(row: SubTrack | None, details: dict, generation: dict | None, max_rows: int) -> str:
    tables = []
    unit = "query" if row is None or row.track == 1 else "turn"
    sections = [(f"Per {unit}", details.get("per_unit"), "unit")]
    if row is not None and row.id == "1b":
        sections[0] = ("Per query (mean over its steps)", details.get("per_unit"), "unit")
        sections.append(("Per step", details.get("per_step"), "step"))
    if generation is not None:
        title = "Per turn: answers" if details.get("per_unit") else "Per turn"
        sections.append((title, generation.get("per_turn"), "turn"))
    for title, rows, first in sections:
        if not (isinstance(rows, list) and rows and all(isinstance(r, dict) for r in rows)):
            continue
        shown = rows[:max_rows]
        note = f" (the first {len(shown)} of {len(rows)}; all are in details.json)" if len(rows) > len(shown) else ""
        tables.append(f"<h3>{_e(title)} ({len(rows)}){_e(note)}</h3>" + _topic_table(row, shown, first))
    if not tables:
        return ""
    judged = generation is not None and (generation.get("judge") or {}).get("ran")
    about = (
        " Judge scores are on the 1-5 scale (the figures above normalize them as (s - 1) / 4); the judge's "
        "rationales are in details.json." if judged else ""
    )
    return (
        "<section class='card' id='per-topic'><h2>Per-topic figures</h2>"
        f"<p class='muted'>Each table scrolls inside its box.{about}</p>" + "".join(tables) + "</section>"
    )


def _topic_table(row: SubTrack | None, rows: list[dict], first: str) -> str:
    names: list[str] = []
    for r in rows:
        for name in r:
            if name not in names and name not in SKIPPED_COLUMNS:
                names.append(name)
    judged = [d for d in DIMENSIONS if any(isinstance(r.get("judgments"), dict) and d in r["judgments"] for r in rows)]
    head = "".join(f"<th{_numeric_class(rows, n)}>{_e(_column(row, n))}</th>" for n in names)
    head += "".join(f"<th class='n'>{_e(_title(d))} (1-5)</th>" for d in judged)
    body = []
    for r in rows:
        cells = [_cell(r.get(n)) for n in names]
        judgments = _dict(r.get("judgments"))
        for d in judged:
            j = _dict(judgments.get(d))
            if j.get("status") == "ok" and j.get("score") is not None:
                cells.append(f"<td class='n'>{_e(j['score'])}</td>")
            else:
                status = {"error": "failed"}.get(j.get("status"), j.get("status") or "—")
                cells.append(f"<td class='n absent'>{_e(status)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f"<div class='box tall'><table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return f"<td>{'yes' if value else 'no'}</td>"
    if isinstance(value, float):
        return f"<td class='n'>{number(value)}</td>"
    if isinstance(value, int):
        return f"<td class='n'>{value}</td>"
    if value is None:
        return "<td class='n muted'>—</td>"
    if isinstance(value, (dict, list)):
        return "<td class='muted'>in details.json</td>"
    return f"<td>{_e(value)}</td>"


def _numeric_class(rows: list[dict], name: str) -> str:
    values = [r.get(name) for r in rows if r.get(name) is not None]
    numeric = values and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    return " class='n'" if numeric else ""


# ---------------------------------------------------------------------------------------------
# Shared pieces


def _group_table(
    title: str,
    groups: dict,
    keys: list[str],
    units: str,
    *,
    extra_rows: Iterable[tuple[str, dict]] = (),
    first: str,
) -> str:
    """Figures per group (domain or depth): the group's unit count, then each key's figure."""
    groups = {g: f for g, f in groups.items() if isinstance(f, dict)} if isinstance(groups, dict) else {}
    if not groups or not keys:
        return ""
    count_field = next((c for c in ("units", "turns", "queries") if _in_groups(c, groups)), None)
    extras = ["fully_covered_queries"] if _in_groups("fully_covered_queries", groups) else []
    head = f"<th>{_e(first)}</th>"
    if count_field:
        head += f"<th class='n'>{_e(units.capitalize())}</th>"
    head += "".join(f"<th class='n'>{_e(_title(k))}</th>" for k in keys)
    head += "".join(f"<th class='n'>{_e(COLUMN_TITLES[k])}</th>" for k in extras)
    body = []
    for label, figures in [*groups.items(), *extra_rows]:
        cells = f"<td class='group'>{_e(label)}</td>"
        if count_field:
            cells += f"<td class='n'>{_e(figures.get(count_field, ''))}</td>"
        cells += "".join(f"<td class='n'>{number(_num(figures.get(k)))}</td>" for k in keys)
        cells += "".join(f"<td class='n'>{_e(figures.get(k, ''))}</td>" for k in extras)
        body.append(f"<tr>{cells}</tr>")
    return (
        f"<h3>{_e(title)}</h3><div class='box'><table><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def _figure(caption: str, svg: str) -> str:
    return f"<figure><figcaption>{_e(caption)}</figcaption>{svg}</figure>"


def _facts(facts: list[tuple[str, str]]) -> str:
    if not facts:
        return ""
    return "<dl class='facts'>" + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in facts) + "</dl>"


def _title(key: str) -> str:
    return KEYS[key].title if key in KEYS else key


def _column(row: SubTrack | None, name: str) -> str:
    if name in KEYS:
        return KEYS[name].title
    if name == "unit":
        return "Query" if row is None or row.track == 1 else "Turn"
    return COLUMN_TITLES.get(name) or name


def _unit_word(row: SubTrack | None) -> str:
    return "queries" if row is None or row.track == 1 else "turns"


def _dict(value) -> dict:
    """A section of details that should be an object, or an empty one (a page never fails on details)."""
    return value if isinstance(value, dict) else {}


def _num(value) -> float | None:
    return float(value) if _finite(value) else None


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _e_text(value: str) -> str:
    return html.escape(value, quote=False)
