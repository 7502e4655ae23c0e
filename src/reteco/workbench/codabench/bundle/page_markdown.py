"""The participants' pages (``pages/*.md``) as HTML, for CodaLab Competitions v1.5.

v1.5 shows a bundle's ``html:`` pages as they are (``Page.html``, ``apps/web/models.py``), so
the Markdown that Codabench renders itself is rendered here, by the subset those pages use:
``#`` headings, paragraphs, ``-``/``*``/``1.`` lists (nested by indentation, with continuation
lines and fenced code inside items), fenced and indented code, pipe tables, and inline code, ``**bold**``,
``*italic*`` and ``[links](url)``. Everything else is text, HTML-escaped: a page shows its
source rather than lose it. No dependency: the package needs no Markdown library for one build
step. A test renders every page and checks that no Markdown syntax is left in the text.
"""

from __future__ import annotations

import html
import re

_FENCE = re.compile(r"^(\s*)```")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"^( *)([-*]|\d+\.)\s+(.*)$")
_CODE_SPAN = re.compile(r"`([^`]+)`")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")


def inline(text: str) -> str:
    """One line's inline Markdown as HTML (escaped; code spans untouched inside)."""
    spans: list[str] = []

    def keep(match: re.Match) -> str:
        spans.append(f"<code>{html.escape(match.group(1))}</code>")
        return f"\x00{len(spans) - 1}\x00"

    text = html.escape(_CODE_SPAN.sub(keep, text), quote=False)
    # The text is escaped already (quotes aside): escaping the address again would double its &amp;.
    text = _LINK.sub(lambda m: f'<a href="{m.group(2).replace(chr(34), "&quot;")}">{m.group(1)}</a>', text)
    text = _BOLD.sub(r"<strong>\1</strong>", text)
    text = _ITALIC.sub(r"<em>\1</em>", text)
    return re.sub("\x00(\\d+)\x00", lambda m: spans[int(m.group(1))], text)


def _table(rows: list[str]) -> str:
    def cells(row: str) -> list[str]:
        return [c.strip() for c in row.strip().strip("|").split("|")]

    header, body = cells(rows[0]), rows[1:]
    if body and set(body[0].replace("|", "").strip()) <= set("-: "):
        body = body[1:]
    out = ["<table>", "<thead><tr>" + "".join(f"<th>{inline(c)}</th>" for c in header) + "</tr></thead>", "<tbody>"]
    out += ["<tr>" + "".join(f"<td>{inline(c)}</td>" for c in cells(r)) + "</tr>" for r in body]
    return "\n".join(out + ["</tbody>", "</table>"])


def render(markdown: str, title: str | None = None) -> str:
    """A page's Markdown as an HTML fragment (``title``: an ``<h1>`` when the page has none)."""
    lines = markdown.splitlines()
    out: list[str] = []
    paragraph: list[str] = []
    lists: list[tuple[int, str]] = []  # open lists: (indentation, "ul"/"ol")
    item: list[str] = []  # text of the open list item not yet written
    i = 0

    def flush_text() -> None:
        if item:
            out.append(inline(" ".join(item)))
            item.clear()
        if paragraph:
            out.append(f"<p>{inline(' '.join(paragraph))}</p>")
            paragraph.clear()

    def close_lists(down_to: int = -1) -> None:
        flush_text()
        while lists and lists[-1][0] > down_to:
            out.append(f"</li></{lists.pop()[1]}>")

    if title and not any(_HEADING.match(line) for line in lines[:3]):
        out.append(f"<h1>{html.escape(title)}</h1>")
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            flush_text()
            indent = len(fence.group(1))
            i += 1
            code = []
            while i < len(lines) and not _FENCE.match(lines[i]):
                code.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
                i += 1
            out.append("<pre><code>" + html.escape("\n".join(code)) + "</code></pre>")
            i += 1
            continue
        if not line.strip():
            flush_text()
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if lists and not (nxt.startswith(" ") or _ITEM.match(nxt)):
                close_lists()
            i += 1
            continue
        if line.startswith("    ") and not lists and not paragraph:  # an indented code block
            code = []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                code.append(lines[i][4:])
                i += 1
            out.append("<pre><code>" + html.escape("\n".join(code).rstrip("\n")) + "</code></pre>")
            continue
        heading = _HEADING.match(line)
        if heading:
            close_lists()
            level = len(heading.group(1))
            out.append(f"<h{level}>{inline(heading.group(2))}</h{level}>")
        elif line.lstrip().startswith("|"):
            close_lists()
            rows = []
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                rows.append(lines[i])
                i += 1
            out.append(_table(rows))
            continue
        elif (match := _ITEM.match(line)) and (lists or not paragraph):
            indent, marker, text = len(match.group(1)), match.group(2), match.group(3)
            kind = "ol" if marker[0].isdigit() else "ul"
            flush_text()
            if lists and indent < lists[-1][0]:
                close_lists(indent)
            if lists and indent == lists[-1][0] and kind != lists[-1][1]:  # another marker: a new list
                close_lists(indent - 1)
            if not lists or indent > lists[-1][0]:
                out.append(f"<{kind}><li>")
                lists.append((indent, kind))
            else:
                out.append("</li><li>")
            item.append(text)
        elif lists:
            item.append(line.strip())
        else:
            paragraph.append(line.strip())
        i += 1
    close_lists()
    return "\n".join(out) + "\n"
