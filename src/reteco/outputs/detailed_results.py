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

from reteco.outputs.charts import is_finite, number
from reteco.outputs.page_html import absent_notes, as_dict, described_table, escape, escape_text, key_title, note_letter
from reteco.outputs.page_sections import (
    handling_section,
    judge_section,
    per_topic_section,
    retrieval_section,
    temporal_section,
    text_metrics_section,
)
from reteco.subtracks import JUDGE, JUDGE_MEAN, KEYS, SUBTRACKS, TEXT, SubTrack

MAX_ROWS = 5000  # per-topic rows shown; the full list stays in details.json


MAX_MESSAGES_UNBOXED = 8  # more warnings than this scroll in their own box


WITHHELD = (
    "Per-topic figures are withheld in this phase: on hidden labels they would reveal them through "
    "repeated submissions. This page shows aggregate figures only."
)


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
    phase, details = as_dict(phase), as_dict(details)
    if messages is None:
        messages = [m for m in details.get("warnings") or [] if isinstance(m, str)]
    title = row.name if row else (subtrack or "unknown sub-track")
    out = [_head(title), _header(title, phase, details, failed)]
    if failed:
        out.append(_refusal(row, messages))
        return "".join(out) + "</main></body></html>"

    scores = {k: v for k, v in (scores or {}).items() if is_finite(v)}
    keys = list(row.keys) if row else list(scores)
    reasons = _absent_reasons(keys, scores, absent or {}, details)
    notes = absent_notes(reasons)
    out.append(_headline(row, keys, scores, notes))
    out.append(_warnings(messages, set(reasons)))
    out.append(_leaderboard(row, keys, scores, notes))
    generation = details.get("generation") if isinstance(details.get("generation"), dict) else None
    if isinstance(details.get("overall"), dict):
        out.append(retrieval_section(row, details))
    if isinstance(details.get("temporal"), dict):
        out.append(temporal_section(details["temporal"]))
    if generation is not None:
        out.append(judge_section(generation, notes))
        out.append(text_metrics_section(generation, notes))
    out.append(handling_section(details, generation))
    if phase.get("per_topic"):
        out.append(per_topic_section(row, details, generation, max_rows))
    out.append(_footer(details))
    return "".join(out) + "</main></body></html>"


def _head(title: str) -> str:
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>RETECO detailed results: {escape(title)}</title><style>{_STYLE}</style></head><body><main>"
    )


def _header(title: str, phase: dict, details: dict, failed: bool) -> str:
    name = phase.get("name") or phase.get("phase") or "unknown"
    split = phase.get("split")
    where = f"Phase <b>{escape(name)}</b>" + (f" ({escape(split)} split)" if split and split != "?" else "")
    if failed:
        policy = ""
    elif phase.get("per_topic"):
        policy = " Per-topic figures are shown at the end of this page."
    else:
        policy = " " + WITHHELD
    files = as_dict(details.get("submission"))
    scored = [files[k] for k in ("run_file", "answers_file") if isinstance(files.get(k), str)]
    scored_line = f"<p class='muted'>Scored: {', '.join(escape(f) for f in scored)}</p>" if scored else ""
    return (
        "<header><p class='kicker'>RETECO · SemEval-2027 Task 1 · detailed results</p>"
        f"<h1>{escape(title)}</h1><p>{where}.{escape_text(policy)}</p>{scored_line}</header>"
    )


def _refusal(row: SubTrack | None, messages: list[str]) -> str:
    where = f"--ref ref/{row.id}" if row else "--ref ref/SUBTRACK"
    items = "".join(f"<li>{escape(m)}</li>" for m in messages) or "<li>no message was recorded</li>"
    box = " class='box tall'" if len(messages) > MAX_MESSAGES_UNBOXED else ""
    return (
        "<section class='card' id='refusal'><h2 class='problem'>The submission could not be scored</h2>"
        f"<div{box}><ul class='messages'>{items}</ul></div>"
        "<h3>What to do</h3><p>Each message names the file and, where it applies, the line. Fix what they "
        "say, check the submission locally with the scoring program's own rules "
        f"(<code>reteco validate {escape(where)} SUBMISSION</code> from the starting kit), and submit again. "
        "A submission that could not be scored does not appear on the leaderboard.</p></section>"
    )


def _footer(details: dict) -> str:
    scorer = as_dict(details.get("scorer"))
    reference = as_dict(details.get("reference"))
    engine = f", {scorer['engine']} engine" if scorer.get("engine") else ""
    return (
        f"<footer>Scored by reteco {escape(scorer.get('version', '?'))}{escape(engine)} against reference "
        f"{escape(reference.get('fingerprint', '?'))}. Every figure of this page is in details.json.</footer>"
    )


def _absent_reasons(keys: list[str], scores: dict, absent: dict[str, str], details: dict) -> dict[str, str]:
    """Why each key missing from ``scores`` is absent: the caller's reason, else the scorer's."""
    generation = as_dict(details.get("generation"))
    judge = as_dict(generation.get("judge"))
    text = as_dict(generation.get("text_metrics"))
    temporal = as_dict(details.get("temporal"))
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


def _headline(row: SubTrack | None, keys: list[str], scores: dict, notes) -> str:
    official = row.official if row else (keys[0] if keys else None)
    out = ["<section class='card headline' id='headline'>"]
    if row is not None and row.official is None:
        out.append(
            f"<p class='note'>Sub-track {escape(row.id)} has no official figure: its leaderboard is not ranked. "
            f"The headline is the {escape(KEYS[JUDGE_MEAN].title)}.</p>"
        )
        official = JUDGE_MEAN
    if official is not None:
        title = KEYS[official].title if official in KEYS else official
        kind = "Official figure" if row is not None and row.official == official else "Headline figure"
        out.append(f"<p class='label'>{kind}: <b>{escape(title)}</b></p>")
        if official in scores:
            out.append(f"<p class='value' id='headline-value'>{number(scores[official])}</p>")
        else:
            out.append(
                f"<p class='value none' id='headline-value'>absent ({note_letter(notes, official)})</p>"
            )
        if official in KEYS:
            unit = f"; {row.unit}" if row else ""
            ranks = " The leaderboard ranks by this figure." if kind == "Official figure" else ""
            out.append(f"<p>What it measures: {escape(KEYS[official].meaning)}{escape(unit)}.{ranks}</p>")
    if notes:
        items = "".join(
            f"<li id='absent-{letter}'>({letter}) <b>{escape(', '.join(key_title(k) for k in keys))}</b>: "
            f"<span class='absent'>absent: {escape(reason)}</span></li>"
            for letter, reason, keys in notes
        )
        out.append(f"<p class='label'>Not in your scores:</p><ul class='absent-list'>{items}</ul>")
    out.append("</section>")
    return "".join(out)


def _warnings(messages: list[str], absent_keys: set[str]) -> str:
    shown = [m for m in messages if not _said_with_absent_keys(m, absent_keys)]
    if not shown:
        return ""
    items = "".join(f"<li>{escape(m)}</li>" for m in shown)
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
        name = f"<b>{escape(key_title(key))}</b>" + (" <span class='muted'>(official)</span>" if official else "")
        if key in scores:
            value = f"<td class='n'>{number(scores[key])}</td>"
        else:
            value = f"<td class='n absent'>absent ({note_letter(notes, key)})</td>"
        rows.append((name, KEYS[key].meaning if key in KEYS else "", value))
    for key in sorted(set(scores) - set(keys)):
        value = f"<td class='n'>{number(scores[key])}</td>"
        rows.append((f"<b>{escape(key_title(key))}</b>", "not a leaderboard column", value))
    return (
        "<section class='card' id='leaderboard'><h2>Leaderboard figures</h2>"
        + described_table("Figure: what it measures", "Value", rows)
        + "</section>"
    )
