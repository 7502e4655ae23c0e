"""``leaderboard.tex`` and ``leaderboard_appendix.tex`` of a sub-track: booktabs tables for the
overview paper.

``leaderboard.tex`` holds the main table alone, a ``table*`` that fits a two-column ACL page and
can be ``\\input`` in its body (rank with its bootstrap interval, the system, the ranking figure
with its interval, the significance group where the letters read, chosen figures, the answers
the judge flagged); ``leaderboard_appendix.tex`` the diagnostics (every other figure) in tables
that each fit the page, and the per-domain and turn-depth breakdowns; there a table longer than
``LONG_ROWS`` is a longtable, which needs one-column mode. Columns that carry no information
(letters at many systems, a figure the same for every system, no flagged answer) are dropped
with a note in the caption. Names
are escaped (``latex_escape``) and shortened by rule (``system_text``); figures to 4 decimals as
on Codabench. Whether a table fits is estimated from the font's glyph widths
(``text_width_pt``; pdflatex is not part of the toolchain), and a table estimated too wide gets
a comment saying so.
"""

from __future__ import annotations

import re

from reteco.metrics.significance import LETTER_ALPHABET
from reteco.subtracks import SUBTRACKS
from reteco.workbench.leaderboard import text as shared
from reteco.workbench.leaderboard import topic_stability_tables

_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
    "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "|": r"\textbar{}",
    "<": r"\textless{}", ">": r"\textgreater{}", "…": r"\ldots{}",
}

# The page the tables are made for: ACL's two-column A4 style (acl.sty): \textwidth 16 cm
# (455.2 pt, a table* across both columns), 11 pt Times; the tables are set in \footnotesize
# (9 pt) with \tabcolsep 4 pt.
TEXT_WIDTH_PT = 455.2
TABCOLSEP_PT = 4.0
FONT_PT = 9.0
# Width estimate of a cell (pdflatex is not part of the toolchain), from the Times-Roman advance
# widths (Adobe's AFM, thousandths of an em): every character is counted at the upper bound of
# its class, so the estimate is at or above the width pdflatex sets. Digits, lowercase letters,
# # and _ at most 500 (but m 778, w 722); capitals at most 722 (but M 889, W 944); punctuation
# . , : ; ' ! | ( ) [ ] - / at most 333; the space 250; @ 921, % 833, & 778; \ldots 1000; any
# other character 1000. A column is its widest cell plus 2 \tabcolsep.
_EM_THOUSANDTHS = {"m": 778, "w": 722, "M": 889, "W": 944, "@": 921, "%": 833, "&": 778, "…": 1000, " ": 250,
                   **dict.fromkeys(".,:;'!|()[]-/", 333), **dict.fromkeys("#_", 500)}
# More rows than this do not fit one float page (\footnotesize rows at 11 pt in a 24.7 cm text
# height, with the caption): such a table is a longtable, which breaks across pages.
LONG_ROWS = 50
# Group letters longer than this (a system in many groups: "a-cHk") do not read in a table.
MAX_LETTERS_CHARS = 6
READABLE_GROUPS = 26  # a..z
SYSTEM_CHARS = 18  # "team/run" is cut to this many characters (the last an ellipsis)
# Column heads of the paper's tables, shorter than the keys' titles; each table's caption spells
# out the ones it uses.
SHORT_TITLES = {
    "tp_10": "TP@10", "tr_10": "TR@10", "tc_10": "TC@10", "ndcg_fc_10": "nDCG|FC@10",
    "ndcg_10_domain_macro": "nDCG macro", "judge_mean": "Judge", "correctness": "Corr.",
    "completeness": "Compl.", "relevance": "Relev.", "coherence": "Coher.", "faithfulness": "Faith.",
    "bertscore_f1": "BERTSc.",
}


def latex_escape(text: str) -> str:
    """``text`` as LaTeX prints it literally: the ten specials and | < > escaped (``R&D_lab``
    becomes ``R\\&D\\_lab``), control characters (which LaTeX cannot print) dropped."""
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in str(text) if ch.isprintable() or ch == " ")


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the last an ellipsis when cut (the full names are
    in leaderboard.csv)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def text_width_pt(text: str) -> float:
    """The estimated width of ``text`` (plain, before escaping) in a table cell, in pt (see
    ``_EM_THOUSANDTHS`` for the rule)."""
    def thousandths(ch: str) -> int:
        if ch in _EM_THOUSANDTHS:
            return _EM_THOUSANDTHS[ch]
        if ch.isascii() and (ch.isdigit() or ch.islower()):
            return 500
        if ch.isascii() and ch.isupper():
            return 722
        return 1000
    return sum(thousandths(ch) for ch in text) * FONT_PT / 1000


def table_width_pt(columns: list[str], rows: list[list[str]]) -> float:
    """The estimated width of a tabular: per column its widest cell (header included) plus
    2 \\tabcolsep."""
    return sum(max(text_width_pt(cell) for cell in column) + 2 * TABCOLSEP_PT
               for column in zip(columns, *rows))


def system_text(system: dict) -> str:
    """``team/run`` in at most ``SYSTEM_CHARS`` characters: unchanged when it fits; else the team
    cut to 10 and the run to the rest, each cut one ending in an ellipsis, so that the start of
    both stays visible (the full names are in leaderboard.csv)."""
    if len(system["name"]) <= SYSTEM_CHARS:
        return system["name"]
    if not system["run"]:
        return shorten(system["team"], SYSTEM_CHARS)
    team = shorten(system["team"], max(10, SYSTEM_CHARS - 1 - len(system["run"])))
    return f"{team}/{shorten(system['run'], SYSTEM_CHARS - 1 - len(team))}"


def _head(key: str, titles: dict[str, str]) -> str:
    return SHORT_TITLES.get(key, titles[key])


def _abbreviations(keys: list[str], titles: dict[str, str]) -> str:
    used = [f"{SHORT_TITLES[k]} = {titles[k]}" for k in keys if k in SHORT_TITLES]
    return f" Abbreviations: {'; '.join(used)}." if used else ""


def latex_columns(board: dict, chosen: list[str] | None = None) -> list[str]:
    """The main table's figures besides the ranking figure: ``chosen`` (``--latex-columns``), or
    ``paper_columns`` of the sub-track's row; keys the board does not have, or no ranked system has,
    are dropped."""
    keys = shared.keys_of(board)
    row = SUBTRACKS.get(board["subtrack"])
    wanted = chosen if chosen is not None else (row.paper_columns if row else ())
    return [k for k in wanted if k in keys and k != board["ranked_by"] and any(k in s for s in board["systems"])]


def _preamble(board: dict, what: str) -> list[str]:
    x = latex_escape
    out = [f"% RETECO leaderboard, sub-track {x(board['title'])}: {what}, written by reteco {board['scorer']['version']}.",
           "% Every figure at full precision, and full names: leaderboard.json / leaderboard.csv."]
    if board["failed"]:
        out.append(f"% {len(board['failed'])} submission(s) could not be scored and are not in the tables: "
                   "see leaderboard.html or leaderboard.json.")
    for warning in board.get("warnings", []):
        out.append(f"% WARNING: {x(warning)}")
    return out


def letters_readable(letters: list[str]) -> bool:
    """Whether group letters read as letters: every system in the first 26 groups (a..z: no
    capital or numbered token such as "X" or "c2") and none written in more than
    ``MAX_LETTERS_CHARS`` characters. At many systems (180: 50-114 groups, "a-X", "P-c2") they do
    not, unless the table shows the top few."""
    return all(len(text) <= MAX_LETTERS_CHARS and group_count([text]) <= READABLE_GROUPS for text in letters)


def group_count(letters: list[str]) -> int:
    """How many significance groups the letters name: groups are numbered from "a" in order
    (``reteco.metrics.significance.letter_token``), so the highest token's number plus one."""
    highest = -1
    for text in letters:
        for letter, cycle in re.findall(r"([A-Za-z])(\d*)", text):
            number = LETTER_ALPHABET.index(letter) + len(LETTER_ALPHABET) * (int(cycle) - 1 if cycle else 0)
            highest = max(highest, number)
    return highest + 1


def render_latex(board: dict, *, columns: list[str] | None = None, top: int | None = None) -> str:
    """``leaderboard.tex``: the main table alone, a ``table*`` that a two-column paper can
    ``\\input`` (rank with its interval, system, the ranking figure, its interval, the
    significance group, the chosen figures, the answers the judge flagged), the top ``top``
    systems when given. A column that carries no information is dropped with a note in the
    caption: the group letters when they do not read as letters (``letters_readable``), the
    flagged answers when none was flagged. More than ``LONG_ROWS`` systems do not fit one page:
    a comment says to give ``--top``. The other tables: ``render_latex_appendix``."""
    x = latex_escape
    titles = shared.titles_of(board)
    figure = board["ranked_by"]
    sub = board["subtrack"]
    out = _preamble(board, "the main table")
    out.append("% One table* (two-column safe): \\usepackage{booktabs}; \\input{leaderboard} in the body.")
    if not board["systems"]:
        out.append(f"% {x(shared.ranking_sentence(board))}")
        return "\n".join(out) + "\n"
    systems = board["systems"][:top] if top else board["systems"]
    chosen = latex_columns(board, columns)
    notes = []
    letters = [s.get("letters", "--") for s in systems]
    show_letters = letters_readable(letters)
    if not show_letters:
        groups = group_count([s.get("letters", "") for s in board["systems"]])
        notes.append(f"Group letters omitted: the {len(board['systems'])} systems fall into {groups} significance "
                     "groups, too many to read as letters (give --top; every group is in leaderboard.csv, every test "
                     "in pairs.csv).")
    flagged = any("flagged_answers" in s for s in board["systems"])
    if flagged and not any(s.get("flagged_answers") for s in systems):
        flagged = False
        notes.append("No answer was flagged as an attempt to influence the judge.")
    head = ["Rank", "System", _head(figure, titles), f"{shared.confidence_percent(board)}% CI",
            *(["Group"] if show_letters else []), *(_head(k, titles) for k in chosen)] + (["Fl."] if flagged else [])
    rows = []
    for s in systems:
        rank = str(s["rank"]) + (f" ({shared.rank_interval_text(s)})" if "rank_low" in s else "")
        cells = [rank, system_text(s), shared.fixed(s[figure]), shared.interval_text(s) or "--"]
        cells += [s.get("letters", "--")] if show_letters else []
        cells += [shared.fixed(s.get(k)) or "--" for k in chosen]
        if flagged:
            cells.append(str(s["flagged_answers"]) if "flagged_answers" in s else "--")
        rows.append(cells)
    shown = f"the top {len(systems)} of {len(board['systems'])} ranked systems" if len(systems) < len(board["systems"]) \
        else f"{len(systems)} ranked systems"
    caption = (f"Sub-track {board['title']}: {shown}, ranked by {titles[figure]} over {board['units']} units; rank "
               f"(its {shared.confidence_percent(board)}% bootstrap interval); {shared.confidence_percent(board)}% "
               "percentile bootstrap interval of the figure; ")
    if show_letters:
        caption += (f"systems sharing a group letter are not significantly different ({_procedure_words(board)}, "
                    f"alpha {shared.alpha_of(board)}); ")
    caption += "-- absent (reasons in leaderboard.json)."
    caption += _abbreviations([figure, *chosen], titles)
    if flagged:
        caption += " Fl.: answers the judge flagged as attempts to influence it."
    caption += "".join(f" {note}" for note in notes)
    if len(rows) > LONG_ROWS:
        out.append(f"% WARNING: {len(rows)} rows do not fit one page: give --top N (the appendix lists every system)")
    spec = "rlrr" + ("l" if show_letters else "") + "r" * (len(head) - 4 - show_letters)
    out += _latex_table(head, spec, rows, caption, f"tab:reteco-{sub}", float_only=True)
    return "\n".join(out) + "\n"


def render_latex_appendix(board: dict, *, columns: list[str] | None = None, top: int | None = None) -> str:
    """``leaderboard_appendix.tex``: every other table (2c's generation side, the diagnostics,
    the per-domain and turn-depth breakdowns, the topic-set stability), every ranked system; a
    table longer than ``LONG_ROWS`` is a longtable, which needs one-column mode (the file's
    first comment says so). A diagnostic figure whose every cell is the same is dropped with a
    note."""
    titles = shared.titles_of(board)
    figure = board["ranked_by"]
    sub = board["subtrack"]
    out = _preamble(board, "the appendix tables")
    out.append("% \\usepackage{booktabs,longtable}; a longtable needs one-column mode: \\onecolumn (or an appendix "
               "set in one column) before \\input{leaderboard_appendix}.")
    if not board["systems"]:
        return "\n".join(out) + "\n"
    chosen = latex_columns(board, columns)
    out += _generation_table(board, top)
    diagnostics = [k for k in shared.keys_of(board) if k != figure and k not in chosen and any(k in s for s in board["systems"])]
    constant = {}
    for k in diagnostics:
        cells = {shared.fixed(s.get(k)) or "--" for s in board["systems"]}
        if len(board["systems"]) > 1 and len(cells) == 1:
            constant[k] = cells.pop()
    diagnostics = [k for k in diagnostics if k not in constant]
    heads = [_head(k, titles) for k in diagnostics]
    for part, keys in enumerate(_fitting_chunks(board["systems"], heads, keys_list=diagnostics), start=1):
        rows = [[str(s["rank"]), system_text(s)] + [shared.fixed(s.get(k)) or "--" for k in keys] for s in board["systems"]]
        caption = f"Sub-track {board['title']}: diagnostics ({part}), every ranked system in rank order."
        caption += _abbreviations(keys, titles)
        if part == 1 and constant:
            caption += " Not shown, the same for every system: " + "; ".join(
                f"{_head(k, titles)} {value}" for k, value in constant.items()) + "."
        out += _latex_table(["Rank", "System", *(_head(k, titles) for k in keys)], "rl" + "r" * len(keys), rows,
                            caption, f"tab:reteco-{sub}-diagnostics-{part}")
    if constant and not diagnostics:
        out.append("% Diagnostics not shown, the same for every system: " + latex_escape("; ".join(
            f"{_head(k, titles)} {value}" for k, value in constant.items())))
    for name, title, groups in (("per_domain", "per domain", board["domains"]),
                                ("per_depth", "per turn depth", board["depth_groups"])):
        for part, chunk in enumerate(_fitting_chunks(board["systems"], groups, keys_list=groups), start=1):
            rows = [[str(s["rank"]), system_text(s)] + [shared.fixed(s[name].get(g, {}).get(figure)) or "--" for g in chunk]
                    for s in board["systems"]]
            caption = f"Sub-track {board['title']}: {titles[figure]} {title}."
            label = f"tab:reteco-{sub}-{name.replace('_', '-')}" + (f"-{part}" if part > 1 else "")
            out += _latex_table(["Rank", "System", *chunk], "rl" + "r" * len(chunk), rows, caption, label)
    out += _topic_stability_tables(board)
    return "\n".join(out) + "\n"


def _topic_stability_tables(board: dict) -> list[str]:
    """One table per metric of ``topic_stability`` (``reteco.workbench.leaderboard.topic_stability_tables``)."""
    stability = board.get("topic_stability")
    if not stability or "absent" in stability:
        return [f"% Topic-set stability absent: {latex_escape(stability['absent'])}"] if stability else []
    out = []
    for metric, block in stability["metrics"].items():
        if "absent" in block:
            out.append(f"% Topic-set stability of {latex_escape(metric)} absent: {latex_escape(block['absent'])}")
            continue
        head, body = topic_stability_tables.rows(block)
        caption = (f"Sub-track {board['title']}, {metric}: {topic_stability_tables.method_sentence(stability)} "
                   f"{block['systems']} systems, {block['topics']} topics.")
        out += _latex_table(head, "l" + "r" * (len(head) - 1), body, caption,
                            f"tab:reteco-{board['subtrack']}-topic-stability-{metric.replace('_', '-')}")
    return out


def _generation_table(board: dict, top: int | None) -> list[str]:
    """2c: the judge mean with its interval, rank interval and group, best first (the top ``top``)."""
    generation = board.get("generation")
    if not generation or "absent" in generation["method"]:
        return []
    key = generation["figure"]
    titles = shared.titles_of(board)
    systems = sorted((s for s in board["systems"] if "ci_low" in s.get("generation_statistics", {})),
                     key=lambda s: s["generation_statistics"]["rank"])
    shown = systems[:top] if top else systems
    rows = [[f"{g['rank']} ({shared.rank_interval_text(g)})", system_text(s), shared.fixed(s[key]),
             shared.interval_text(g), g["letters"]] for s in shown for g in [s["generation_statistics"]]]
    caption = (f"Sub-track {board['title']}: the answers, {len(shown)} of {len(systems)} systems by {titles[key]} over "
               f"{board['units']} turns; rank (its {shared.confidence_percent(board)}% bootstrap interval), "
               f"{shared.confidence_percent(board)}% percentile bootstrap interval; systems sharing a group letter are "
               f"not significantly different ({_procedure_words(board)}, alpha {shared.alpha_of(board)}).")
    return _latex_table(["Rank", "System", _head(key, titles), f"{shared.confidence_percent(board)}% CI", "Group"],
                        "rlrrl", rows, caption, f"tab:reteco-{board['subtrack']}-generation")


def _procedure_words(board: dict) -> str:
    procedure = board["method"].get("procedure", "holm")
    return {"tukey-hsd": "randomised Tukey HSD over all pairs", "holm": "paired randomization tests, Holm-corrected",
            "fdr": "paired randomization tests, Benjamini-Hochberg FDR"}[procedure]


def _fitting_chunks(systems: list[dict], heads: list[str], *, keys_list: list[str]) -> list[list[str]]:
    """``keys_list`` (keys or group names; ``heads`` their column heads) cut into runs whose
    table (rank, system and the runs' figures) fits ``TEXT_WIDTH_PT`` by ``table_width_pt``."""
    used = table_width_pt(["Rank", "System"], [[str(s["rank"]), system_text(s)] for s in systems])
    chunks: list[list[str]] = []
    width = used
    for item, head in zip(keys_list, heads):
        column = max(text_width_pt(head), text_width_pt("0.0000")) + 2 * TABCOLSEP_PT
        if not chunks or width + column > TEXT_WIDTH_PT:
            chunks.append([])
            width = used
        chunks[-1].append(item)
        width += column
    return chunks


def _latex_table(columns: list[str], spec: str, body: list[list[str]], caption: str, label: str, *,
                 float_only: bool = False) -> list[str]:
    """A booktabs table of plain cells (escaped here): a table* float, or a longtable past
    ``LONG_ROWS`` rows unless ``float_only`` (the main table, two-column safe); a comment when the
    width estimate exceeds the page."""
    x = latex_escape
    width = table_width_pt(columns, body)
    head = " & ".join(x(c) for c in columns) + " \\\\"
    rows = [" & ".join(x(c) for c in row) + " \\\\" for row in body]
    note = [] if width <= TEXT_WIDTH_PT else [
        f"% WARNING: estimated {width:.0f} pt wide, more than the page's {TEXT_WIDTH_PT} pt: choose fewer columns"]
    if len(body) > LONG_ROWS and not float_only:
        return ["", *note, "\\begingroup\\footnotesize\\setlength{\\tabcolsep}{4pt}",
                f"\\begin{{longtable}}{{{spec}}}", f"\\caption{{{x(caption)}}}\\label{{{label}}}\\\\", "\\toprule",
                head, "\\midrule", "\\endfirsthead", "\\toprule", head, "\\midrule", "\\endhead",
                "\\bottomrule", "\\endlastfoot", *rows, "\\end{longtable}", "\\endgroup"]
    return ["", *note, "\\begin{table*}[t]", "\\centering", "\\footnotesize", "\\setlength{\\tabcolsep}{4pt}",
            f"\\begin{{tabular}}{{{spec}}}", "\\toprule", head, "\\midrule", *rows, "\\bottomrule", "\\end{tabular}",
            f"\\caption{{{x(caption)}}}", f"\\label{{{label}}}", "\\end{table*}"]
