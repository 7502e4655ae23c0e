"""The documentation: README.md, docs/, the competition's pages/, bench/ and reference_data/ READMEs.

What is checked: every relative link points to an existing file (and, with ``#anchor``, to a
heading of it); the README stays a five-minute read (at most 6 KB) that starts with the project's
two commands and whose sub-track table names every sub-track of ``reteco.subtracks`` with its
official key; no document names an absolute path of this machine; the participants' pages in
pages/ (the bundle's own folder, at the repository's top) are exactly the pages the Codabench competition is built from, and hold no
relative link (Codabench shows each page on its own, where a link to a file resolves nowhere);
every `reteco <command> --flag` written in code in the documents (and the starting kit's README)
names a command of the CLI and options its parser has.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path, PurePosixPath

import pytest
from support.paths import REPO_ROOT as REPO

from reteco.subtracks import SUBTRACKS
from reteco.workbench.codabench.bundle import competition as definition

README = REPO / "README.md"
DOCS = REPO / "docs"
PARTICIPANTS = REPO / definition.PAGES_FOLDER  # the competition's pages: the bundle's pages/
README_MAX_BYTES = 6 * 1024

# Inline links and images, [text](target) or ![alt](target "title"); code spans are removed first.
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_CODE_BLOCK = re.compile(r"^```.*?^```", re.S | re.M)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def documents() -> list[Path]:
    return [README, REPO / "bench" / "README.md", REPO / "reference_data" / "README.md", *sorted(DOCS.rglob("*.md")),
            *sorted(PARTICIPANTS.glob("*.md"))]


def _prose(text: str) -> str:
    """The text without fenced code blocks and code spans (a link inside them is no link)."""
    return _CODE_SPAN.sub("", _CODE_BLOCK.sub("", text))


def links(path: Path) -> list[str]:
    return _LINK.findall(_prose(path.read_text(encoding="utf-8")))


def _is_external(target: str) -> bool:
    return bool(re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I))


def anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, -N on repeats."""
    seen: dict[str, int] = {}
    out = set()
    for heading in _HEADING.findall(_CODE_BLOCK.sub("", path.read_text(encoding="utf-8"))):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def test_the_checker_finds_links_and_anchors(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# Exit codes\n## The `run` format (TREC)\n## Exit codes\n"
        "See [a](other.md#x), ![img](pic.png \"t\"), [web](https://example.org), `[not](code.md)`.\n"
        "```\n[nor](block.md)\n```\n",
        encoding="utf-8",
    )
    assert links(page) == ["other.md#x", "pic.png", "https://example.org"]
    assert anchors(page) == {"exit-codes", "the-run-format-trec", "exit-codes-1"}


@pytest.mark.parametrize("doc", documents(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_points_to_an_existing_file(doc):
    assert doc.is_file(), f"{doc.relative_to(REPO)} is missing"
    broken = []
    for target in links(doc):
        if _is_external(target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (doc.parent / file_part).resolve() if file_part else doc
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.relative_to(REPO)}")
    assert not broken, f"{doc.relative_to(REPO)}: " + "; ".join(broken)


def test_readme_is_a_five_minute_read():
    size = len(README.read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes; move details into docs/ (limit {README_MAX_BYTES})"


def test_readme_starts_with_the_two_commands():
    lines = README.read_text(encoding="utf-8").splitlines()
    body = [line for line in lines if line.strip() and not line.startswith("# ")]
    assert body[0] == "```", "the README's first content is the block of the project's two commands"
    assert body[1].startswith("make score ") and "#" in body[1]
    assert body[2].startswith("make test ") and "#" in body[2]
    assert body[3] == "```"


def _readme_table_rows() -> list[list[str]]:
    rows = []
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("|") and not set(line) <= set("|-: "):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def test_readme_table_names_every_subtrack_and_its_official_key():
    rows = {cells[0]: cells for cells in _readme_table_rows()}
    for sub in SUBTRACKS.values():
        assert sub.name in rows, f"the README's sub-track table has no row '{sub.name}'"
        row = " | ".join(rows[sub.name])
        if sub.official is None:
            assert "none" in row.lower(), f"{sub.name}: the table must say it has no official figure"
            assert f"`{sub.keys[0]}`" not in rows[sub.name][2]
        else:
            assert f"`{sub.official}`" in rows[sub.name][2], f"{sub.name}: official key `{sub.official}` missing"
    names = {sub.name for sub in SUBTRACKS.values()}
    assert {name for name in rows if re.match(r"^\d[a-z] ", name)} == names, "a row names no sub-track of the table"


def _this_machine() -> list[str]:
    """Absolute paths that exist only here: the checkout, its parents below /, the home folder.
    The temporary folder (``/tmp/``) is everyone's, not this machine's: a document may use
    ``/tmp/x`` as a scratch path in an example, and a clone that lives in ``/tmp/...`` must not
    turn that into an error."""
    shared = {Path(tempfile.gettempdir()).resolve(), Path("/tmp")}
    paths = {str(REPO) + "/"}
    paths |= {str(parent) + "/" for parent in REPO.parents if len(parent.parts) > 1 and parent not in shared}
    home = str(Path.home())
    if home not in ("/", ""):
        paths.add(home + "/")
    return sorted(paths)


@pytest.mark.parametrize("doc", documents(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_document_names_an_absolute_path_of_this_machine(doc):
    text = doc.read_text(encoding="utf-8")
    # An absolute path starts the word it is in: `/check/` inside `codabench/check/` is a relative
    # path that happens to share a folder name with a checkout living in `/check/...` (CI's does).
    found = [p for p in _this_machine() if re.search(r"(?<![\w.~/-])" + re.escape(p), text)]
    assert not found, f"{doc.relative_to(REPO)} names {found}: write paths relative to the repository"


def test_each_participants_page_is_a_page_of_the_competition():
    sources = {path for _, path in definition.PAGES} | {definition.TERMS}
    on_disk = {p.relative_to(REPO).as_posix() for p in PARTICIPANTS.glob("*.md")}
    assert on_disk == sources, f"pages not in the competition: {on_disk - sources}; missing: {sources - on_disk}"
    for _, path in definition.PAGES:
        assert PurePosixPath(path).parent.as_posix() == definition.PAGES_FOLDER  # the bundle's own folder


@pytest.mark.parametrize("page", sorted(PARTICIPANTS.glob("*.md")), ids=lambda p: p.name)
def test_participants_pages_hold_no_relative_link(page):
    relative = [t for t in links(page) if not _is_external(t)]
    assert not relative, f"{page.name}: {relative}: on Codabench a page stands alone; name the page instead"


# --- documented commands and flags exist -------------------------------------------------------

# `reteco <command>` in code (a span or a fenced block), up to the end of the shell command: a
# pipe, `;`, `&&`, `)` or a comment. Continuation lines (after a trailing backslash, or indented
# lines that go on with `[--flag`/`--flag`) belong to the command above them.
_COMMAND = re.compile(r"(?<![\w./-])reteco\s+([a-z][a-z-]*)([^|;&)#`]*)")
_FLAG = re.compile(r"(?<![\w/-])(--?[a-zA-Z][\w-]*)")
_CONTINUED = re.compile(r"^\s+(\[|--)")
_COMMENT = re.compile(r"(?:^|\s)#.*$")


def _code_lines(text: str) -> list[str]:
    """Every code span, and every logical line of every fenced block (continuations joined)."""
    lines = []
    for block in _CODE_BLOCK.findall(text):
        for line in (_COMMENT.sub("", line).rstrip() for line in block.split("\n")[1:-1]):
            if lines and (lines[-1].endswith("\\") or _CONTINUED.match(line)):
                lines[-1] = lines[-1].rstrip("\\") + " " + line.strip()
            else:
                lines.append(line)
        lines.append("")  # a block's last line is never continued by the next block
    lines += [span.strip("`") for span in _CODE_SPAN.findall(_CODE_BLOCK.sub("", text))]
    return lines


def documented_commands(text: str) -> list[tuple[str, list[str]]]:
    """(command, [flags]) for every `reteco <command> ...` written in code in ``text``."""
    found = []
    for line in _code_lines(text):
        for match in _COMMAND.finditer(line):
            found.append((match.group(1), _FLAG.findall(match.group(2))))
    return found


def _parsers() -> dict:
    """Each subcommand's argparse parser, by name (the parsers `reteco` itself builds)."""
    import argparse

    from reteco.commands import COMMANDS, build_parser

    parser = build_parser(list(COMMANDS))
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_the_command_finder_reads_spans_blocks_and_continuations(tmp_path):
    text = (
        "Run `reteco score --ref R -q A` or `python -m reteco setup-wordnet --force`; not `reteco.judge`.\n"
        "```\n"
        "reteco leaderboard --ref REF --out OUT [--jobs N]   # --not-a-flag in a comment\n"
        "                   [--seed S]\n"
        "reteco judge-submissions --ref R \\\n"
        "    --submissions B\n"
        "cat run.txt | reteco validate --ref REF/2a -\n"
        "(cd x && zip ../all.zip 1a) && reteco bundle --no-check\n"
        "```\n"
    )
    assert documented_commands(text) == [
        ("leaderboard", ["--ref", "--out", "--jobs", "--seed"]),
        ("judge-submissions", ["--ref", "--submissions"]),
        ("validate", ["--ref"]),
        ("bundle", ["--no-check"]),
        ("score", ["--ref", "-q"]),
        ("setup-wordnet", ["--force"]),
    ]


def test_every_documented_command_and_flag_exists():
    parsers = _parsers()
    wrong, checked = [], 0
    for doc in documents() + [REPO / "starting_kit" / "README.md"]:
        for command, flags in documented_commands(doc.read_text(encoding="utf-8")):
            where = doc.relative_to(REPO).as_posix()
            if command not in parsers:
                wrong.append(f"{where}: `reteco {command}` is no command")
                continue
            options = parsers[command]._option_string_actions
            wrong += [f"{where}: `reteco {command}` has no option {flag}" for flag in flags if flag not in options]
            checked += 1
    assert not wrong, "; ".join(wrong)
    # Not vacuous: the guides name most commands with their options.
    assert checked >= 60, f"only {checked} documented commands found: is the finder broken?"


def test_a_wrong_flag_in_a_document_is_found():
    parsers = _parsers()
    found = documented_commands("`reteco score --ref R --no-such-flag` and `reteco scorez --ref R`")
    assert found == [("score", ["--ref", "--no-such-flag"]), ("scorez", ["--ref"])]
    assert "--no-such-flag" not in parsers["score"]._option_string_actions
    assert "scorez" not in parsers
