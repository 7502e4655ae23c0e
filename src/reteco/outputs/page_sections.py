"""The sections of the detailed results page (``reteco.outputs.detailed_results``): retrieval
figures and charts, the Track 1 temporal panel, the judge and the text metrics of 2b/2c, how the
submission was read (each count with what it means) and the per-topic tables the phase allows.
"""

from __future__ import annotations

from reteco.outputs.charts import Bar, Point, bar_chart, depth_curve, number
from reteco.outputs.page_html import (
    SKIPPED_COLUMNS,
    as_dict,
    as_int,
    as_number,
    column_title,
    described_table,
    escape,
    facts_list,
    figure_block,
    group_table,
    in_groups,
    key_title,
    note_letter,
    numeric_class,
    table_cell,
    unit_word,
)
from reteco.problems import printable
from reteco.subtracks import DIMENSIONS, JUDGE_MEAN, KEYS, TEMPORAL, TEXT, SubTrack, judged_dimensions

# What each deterministic-handling count means for the participant (details["counts"] of a run,
# details["generation"]["answers"] and ["evidence"] of 2b/2c answers). A count a scorer adds
# must get its line here (tests/outputs/test_detailed_results_page.py checks every count the scorers write).
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


def retrieval_section(row: SubTrack | None, details: dict) -> str:
    key = row.official if row and row.official else next(iter(details["overall"]), None)
    if key is None:
        return ""
    units = unit_word(row)
    per_domain = as_dict(details.get("per_domain"))
    per_depth = as_dict(details.get("per_depth"))
    out = ["<section class='card' id='retrieval'><h2>Retrieval</h2>"]
    out.append(f"<div class='grid'>{group_charts(details, key, 'units', units)}</div>")
    if isinstance(details.get("step_mean"), dict):
        step_mean = details["step_mean"]
        figures = ", ".join(f"{escape(key_title(k))} {number(as_number(v))}" for k, v in step_mean.items() if k in KEYS)
        out.append(f"<p class='muted'>Mean over all steps (not a leaderboard figure): {figures}.</p>")
    candidates = row.keys if row else details["overall"]
    metric_keys = [k for k in candidates if k in details["overall"] or in_groups(k, per_domain)]
    out.append(group_table(
        "Per domain", per_domain, metric_keys, units,
        extra_rows=[("All (mean over " + units + ")", details["overall"] | temporal_overall(details)),
                    ("Domain macro", (details.get("domain_macro") or {}) | temporal_macro(details))],
        first="Domain",
    ))  # fmt: skip
    if per_depth:
        out.append(group_table("Per turn depth", per_depth, metric_keys, units, first="Depth"))
    out.append("</section>")
    return "".join(out)


def temporal_overall(details: dict) -> dict:
    temporal = as_dict(details.get("temporal"))
    return as_dict(temporal.get("overall"))


def temporal_macro(details: dict) -> dict:
    temporal = as_dict(details.get("temporal"))
    macro = as_dict(temporal.get("domain_macro"))
    return {k: v for k, v in macro.items() if k in KEYS}


def temporal_section(temporal: dict) -> str:
    overall = as_dict(temporal.get("overall"))
    bars = [Bar(key_title(k), as_number(overall.get(k))) for k in TEMPORAL]
    chart = bar_chart("Temporal diagnostics at 10, mean over queries", bars, missing_text="absent (see the headline)")
    facts = []
    queries = as_int(temporal.get("queries"))
    fully = as_int(temporal.get("fully_covered_queries"))
    if fully is not None and queries is not None:
        facts.append(("Fully covered queries", f"{fully} of {queries} (the queries {key_title('ndcg_fc_10')} averages)"))
    with_periods = as_int(temporal.get("queries_with_required_periods"))
    without = as_int(temporal.get("queries_without_required_periods"))
    if with_periods is not None:
        text = f"{with_periods} queries, {as_int(temporal.get('required_periods')) or 0} periods"
        if without:
            text += f"; {without} queries without a required period are left out of {key_title('tc_10')}"
        facts.append(("Required time periods", text))
    facts.append(("Temporal labels", label_source(temporal)))
    if isinstance(temporal.get("coverage_over"), str):
        facts.append(("Coverage over", temporal["coverage_over"]))
    unlabelled = temporal.get("unlabelled_top10")
    if isinstance(unlabelled, dict) and as_int(unlabelled.get("documents")) is not None:
        facts.append((
            "Unlabelled documents",
            f"{unlabelled.get('unlabelled', 0)} of {unlabelled['documents']} distinct top-10 documents "
            f"(in {unlabelled.get('queries_with_unlabelled', 0)} queries) have no temporal label: "
            "they count as not temporally relevant",
        ))  # fmt: skip
    step_mean = as_dict(temporal.get("step_mean"))
    if step_mean:
        parts = ", ".join(f"{key_title(k)} {number(as_number(step_mean[k]))}" for k in TEMPORAL if k in step_mean)
        share = as_number(step_mean.get("own_period_covered_share"))
        own = (
            f"; a step's own period is covered by its own top 10 in {share:.1%} of "
            f"{step_mean.get('steps_with_own_period')} steps" if share is not None else ""
        )
        facts.append(("Mean over steps", f"{parts} (not leaderboard figures){own}"))
    return (
        "<section class='card' id='temporal'><h2>Temporal diagnostics</h2><div class='grid'>"
        f"{figure_block('Temporal diagnostics at 10 (mean over queries)', chart)}"
        f"<div>{facts_list(facts)}</div></div></section>"
    )


def label_source(temporal: dict) -> str:
    source = temporal.get("source")
    description = temporal.get("source_description")
    if source == "frozen":
        labels = as_dict(temporal.get("labels"))
        name = "frozen labels" + (f" (content hash {labels['content_hash']})" if labels.get("content_hash") else "")
    elif source == "oracle":
        oracle = as_dict(temporal.get("oracle"))
        name = "offline oracle" if oracle.get("periods_file") else "qrels fallback"
    else:
        name = str(source or "unknown")
    if not isinstance(description, str) or not description:
        return name
    return f"{name}. {description[0].upper()}{description[1:]}."


def judge_section(generation: dict, notes) -> str:
    judge = as_dict(generation.get("judge"))
    out = ["<section class='card' id='judge'><h2>LLM judge</h2>"]
    who = []
    for name, label in (("model", "Model"), ("prompt_version", "Prompt version"), ("signature", "Judge signature")):
        if judge.get(name) is not None:
            who.append((label, str(judge[name])))
    if judge.get("ran"):
        per_dimension = as_dict(judge.get("per_dimension"))
        dimensions = judged_dimensions(judge)  # the prompt version's
        overall = as_dict(generation.get("overall"))
        bars = [Bar(key_title(d), as_number((per_dimension.get(d) or {}).get("mean"))) for d in dimensions]
        chart = bar_chart(
            f"The {how_many(dimensions)} judge dimensions (0-1)", bars, mean=as_number(overall.get(JUDGE_MEAN)), mean_label="judge mean",
            missing_text="no valid judgment",
        )  # fmt: skip
        calls = as_dict(judge.get("calls"))
        if calls:
            who.append(("Judgments", f"{calls.get('judgments', 0)} ({calls.get('cached', 0)} from the cache, "
                                     f"{calls.get('new', 0)} new)"))  # fmt: skip
        if judge.get("system_fingerprints"):
            # The server's own text: escaped as every participant-visible value is.
            who.append(("System fingerprints", ", ".join(printable(str(fp)) for fp in judge["system_fingerprints"])))
        title = f"The {how_many(dimensions)} judge dimensions (normalized (s - 1) / 4)"
        out.append(f"<div class='grid'>{figure_block(title, chart)}")
        out.append(f"<div>{facts_list(who)}</div></div>")
        rows = []
        for d in dimensions:
            f = as_dict(per_dimension.get(d))
            counts = ("valid", "invalid", "error", "missing_answer")
            cells = "".join(f"<td class='n'>{escape(f.get(c, '—'))}</td>" for c in counts)
            mean = number(as_number(f.get("mean")), "no valid judgment")
            rows.append(f"<tr><td>{escape(key_title(d))}</td><td class='n'>{mean}</td>{cells}"
                        f"<td class='n'>{escape(f.get('turns_averaged', '—'))}</td></tr>")  # fmt: skip
        out.append(
            "<div class='box'><table><thead><tr><th>Dimension</th><th class='n'>Mean</th><th class='n'>Valid</th>"
            "<th class='n'>Invalid</th><th class='n'>Failed</th><th class='n'>No answer (scores 0)</th>"
            "<th class='n'>Turns averaged</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>"
        )
        charts = group_charts(generation, JUDGE_MEAN, "turns", "turns")
        if charts:
            out.append(f"<div class='grid'>{charts}</div>")
    else:
        letter = note_letter(notes, JUDGE_MEAN) or note_letter(notes, DIMENSIONS[0])
        why = f" (the reason is under the headline, note {letter})" if letter else ""
        out.append(f"<p>The judge did not run for this submission: the five dimensions have no figures{why}.</p>")
        if who:
            out.append(f"<p class='label muted'>The judge that scores this sub-track:</p>{facts_list(who)}")
    out.append("</section>")
    return "".join(out)


def text_metrics_section(generation: dict, notes) -> str:
    metrics = as_dict(generation.get("text_metrics"))
    overall = as_dict(generation.get("overall"))
    macro = as_dict(generation.get("domain_macro"))
    rows = []
    charts = []
    settings_list = []
    for name in [k for k in TEXT if k in metrics] + [k for k in metrics if k not in TEXT]:
        info = metrics[name] if isinstance(metrics[name], dict) else {}
        if info.get("available"):
            settings = as_dict(info.get("settings"))
            how = ", ".join(f"{k} {v}" for k, v in settings.items())
            settings_list.append(f"<li><b>{escape(key_title(name))}</b>: {escape(how)}</li>")
            rows.append(
                f"<tr><td><b>{escape(key_title(name))}</b></td><td class='n'>{number(as_number(overall.get(name)))}</td>"
                f"<td class='n'>{number(as_number(macro.get(name)))}</td>"
                f"<td class='n'>{escape(info.get('turns_averaged', '—'))}</td></tr>"
            )
            charts.append(group_charts(generation, name, "turns", "turns"))
        else:
            letter = note_letter(notes, name)
            rows.append(
                f"<tr><td><b>{escape(key_title(name))}</b></td><td class='n absent' colspan='3'>absent ({letter})</td></tr>"
            )
    if not rows:
        return ""
    keys = generation_keys(generation)
    return (
        "<section class='card' id='text-metrics'><h2>Text metrics against the reference answers</h2>"
        "<div class='box'><table><thead><tr><th>Metric</th><th class='n'>All turns</th>"
        "<th class='n'>Domain macro</th><th class='n'>Turns averaged</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
        + (f"<ul class='meaning'>{''.join(settings_list)}</ul>" if settings_list else "")
        + f"<div class='grid'>{''.join(charts)}</div>"
        + group_table(
            "Per domain", as_dict(generation.get("per_domain")), keys, "turns", first="Domain",
            extra_rows=[("All (mean over turns)", overall), ("Domain macro", macro)],
        )
        + group_table("Per turn depth", as_dict(generation.get("per_depth")), keys, "turns", first="Depth")
        + "</section>"
    )


def generation_keys(generation: dict) -> list[str]:
    groups = [f for section in ("per_domain", "per_depth") for f in (generation.get(section) or {}).values()]
    present = {k for f in groups if isinstance(f, dict) for k in f}
    dimensions = judged_dimensions(as_dict(generation.get("judge")))
    return [k for k in (*TEXT, *dimensions, JUDGE_MEAN) if k in present]


def how_many(dimensions: tuple[str, ...]) -> str:
    """'five' for the five dimensions: the number in words up to ten."""
    words = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
    return words[len(dimensions)] if len(dimensions) < len(words) else str(len(dimensions))


def group_charts(figures: dict, key: str, count_field: str, units: str) -> str:
    """The per-domain bars and the turn-depth curve of one figure, each with the overall mean.

    ``figures``: a section with ``overall``, ``per_domain`` and ``per_depth`` (the retrieval
    details, or ``details["generation"]``); ``count_field``: where a group's unit count is.
    """
    overall = as_number(as_dict(figures.get("overall")).get(key))
    title = key_title(key)
    out = []
    per_domain = as_dict(figures.get("per_domain"))
    if per_domain:
        bars = [Bar(d, as_number(f.get(key)), as_int(f.get(count_field))) for d, f in per_domain.items() if as_dict(f)]
        out.append(figure_block(
            f"{title} per domain (the line: mean over all {units})",
            bar_chart(f"{title} per domain", bars, mean=overall, count_word=units),
        ))  # fmt: skip
    per_depth = as_dict(figures.get("per_depth"))
    if per_depth:
        points = [Point(g, as_number(f.get(key)), as_int(f.get(count_field))) for g, f in per_depth.items() if as_dict(f)]
        out.append(figure_block(
            f"{title} by turn depth (T5+: turn 5 and later)",
            depth_curve(f"{title} by turn depth", points, mean=overall, count_word=units),
        ))  # fmt: skip
    return "".join(out)


def handling_section(details: dict, generation: dict | None) -> str:
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
            rows.append((f"<code>{escape(name)}</code>", COUNT_MEANINGS.get(name, ""), f"<td class='n{css}'>{value}</td>"))
        source = counts.get("source") if isinstance(counts.get("source"), str) else None
        lead = f"<p class='muted'>Evidence: {escape(source)}.</p>" if source else ""
        out.append(f"<h3>{escape(title)}</h3>{lead}" + described_table("Count: what it means", "Value", rows))
    submission = as_dict(details.get("submission"))
    ignored = [str(f) for f in submission.get("ignored") or []]
    if ignored:
        out.append(f"<p>Files in your submission that were not read: {escape(', '.join(ignored))}.</p>")
    rules = [r for r in (details.get("rules") or []) if isinstance(r, str)]
    if generation is not None:
        rules += [r for r in (generation.get("rules") or []) if isinstance(r, str)]
    if rules:
        items = "".join(f"<li>{escape(r)}</li>" for r in rules)
        out.append(f"<details><summary>The scoring rules ({len(rules)})</summary><ul>{items}</ul></details>")
    if not out:
        return ""
    return "<section class='card' id='handling'><h2>How your submission was read</h2>" + "".join(out) + "</section>"


def per_topic_section(row: SubTrack | None, details: dict, generation: dict | None, max_rows: int) -> str:
    tables = []
    unit = "query" if row is None or row.track == 1 else "turn"
    sections = [(f"Per {unit}", details.get("per_unit"), "unit")]
    if row is not None and row.step_topics:
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
        tables.append(f"<h3>{escape(title)} ({len(rows)}){escape(note)}</h3>" + topic_table(row, shown, first))
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


def topic_table(row: SubTrack | None, rows: list[dict], first: str) -> str:
    names: list[str] = []
    for r in rows:
        for name in r:
            if name not in names and name not in SKIPPED_COLUMNS:
                names.append(name)
    # The run's dimensions, in its prompt version's order (each row's judgments are in that order).
    judged = list(dict.fromkeys(d for r in rows if isinstance(r.get("judgments"), dict) for d in r["judgments"]))
    head = "".join(f"<th{numeric_class(rows, n)}>{escape(column_title(row, n))}</th>" for n in names)
    head += "".join(f"<th class='n'>{escape(key_title(d))} (1-5)</th>" for d in judged)
    body = []
    for r in rows:
        cells = [table_cell(r.get(n)) for n in names]
        judgments = as_dict(r.get("judgments"))
        for d in judged:
            j = as_dict(judgments.get(d))
            if j.get("status") == "ok" and j.get("score") is not None:
                cells.append(f"<td class='n'>{escape(j['score'])}</td>")
            else:
                status = {"error": "failed"}.get(j.get("status"), j.get("status") or "—")
                cells.append(f"<td class='n absent'>{escape(status)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f"<div class='box tall'><table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )
