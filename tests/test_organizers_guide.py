"""The organizers' guide runs as written (issue 25): a docs test.

``docs/organizers.md``, then ``docs/codabench_judge.md``: every fenced block is either run (a
```` ```sh ````, ```` ```bash ```` or ```` ```console ```` block) or carries, on the line above
it, ``<!-- not run: reason -->`` (the reasons are listed by ``test_the_blocks_not_run_say_why``).
The runnable blocks are run in order in one empty folder, each command (continuation lines
joined, comment lines dropped) through ``bash -c``, with ``reteco`` on PATH as this worktree's
package (``python -m reteco`` with its ``src`` first on PYTHONPATH). A command is expected to exit
0 unless it ends with ``# exit N``.

Nothing in a command is substituted. What the guide says the organizers provide is provided:
- the judge config ``organizers/judge.yaml`` with its key in ``organizers/judge.key`` (written
  here pointing at the fake OpenAI server on 127.0.0.1, prompt version 3, test-sized waits);
- ``RETECO_CACHE_DIR``, the documented cache location, set to the test's folder (never the
  developer's cache);
- the steps a person does, marked ``<!-- by hand: step -->`` before the block that needs them
  (``BY_HAND`` below: an unknown step fails the test).

Sizes: the guide's own (the synthetic release's dev split, the kit's sample submissions,
``--n 40`` of the 102 answered items); about a minute on an idle machine.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.fake_openai_server import FakeOpenAI
from support.paths import REPO_ROOT

from reteco.release.synthetic.sample_answers import sample_answers

GUIDES = (REPO_ROOT / "docs" / "organizers.md", REPO_ROOT / "docs" / "codabench_judge.md")
RUN_LANGUAGES = {"sh", "bash", "console"}
_MARK = re.compile(r"^<!--\s*(not run|by hand):\s*(.*?)\s*-->\s*$")
_EXIT = re.compile(r"#\s*exit\s+(\d+)\s*$")
COMMAND_TIMEOUT_S = 600  # one command; the whole guide takes about a minute idle


@dataclass
class Block:
    guide: str
    line: int  # of the opening fence, 1-based
    language: str
    text: str
    not_run: str | None  # the reason, when marked
    by_hand: list[str]  # steps marked since the previous block

    def commands(self) -> list[tuple[str, int]]:
        """(command, expected exit code), in order: continuation lines joined, comment lines dropped."""
        out, pending = [], ""
        for raw in self.text.splitlines():
            if not pending and (not raw.strip() or raw.lstrip().startswith("#")):
                continue
            if raw.rstrip().endswith("\\"):
                pending += raw.rstrip()[:-1] + " "
                continue
            command = pending + raw
            pending = ""
            found = _EXIT.search(command)
            out.append((command, int(found.group(1)) if found else 0))
        return out


def guide_blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path`` with the markers that precede it."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    not_run, by_hand, i = None, [], 0
    while i < len(lines):
        line = lines[i]
        mark = _MARK.match(line.strip())
        if mark:
            if mark.group(1) == "not run":
                not_run = mark.group(2)
            else:
                by_hand.append(mark.group(2))
        elif line.startswith("```"):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            blocks.append(Block(path.name, i + 1, line[3:].strip(), "\n".join(lines[i + 1:end]), not_run, by_hand))
            not_run, by_hand, i = None, [], end
        elif line.strip() and not_run is not None and not lines[i - 1].strip().startswith("<!--"):
            pytest.fail(f"{path.name}:{i}: a 'not run' marker must stand on the line before its block")
        i += 1
    return blocks


def all_blocks() -> list[Block]:
    return [b for path in GUIDES for b in guide_blocks(path)]


# --- what a person does, by the guide's own words -------------------------------------------------


def fill_sheets(folder: Path) -> None:
    """Annotators rate: ann1 as the judge did, the others one point lower where they can (so the
    agreement has figures with variance and a human ceiling)."""
    judge = {(r["item_id"], r["dimension"]): int(r["score"])
             for r in csv.DictReader((folder / "human" / "judge.csv").open(encoding="utf-8"))}
    sheets = sorted((folder / "human" / "annotators").glob("*/sheet.csv"))
    assert sheets, "human-sample wrote no sheet"
    for n, sheet in enumerate(sheets):
        rows = list(csv.DictReader(sheet.open(encoding="utf-8")))
        for k, row in enumerate(rows):
            base = judge.get((row["item_id"], row["dimension"]), 3)
            row["score"] = str(base if n == 0 else max(1, min(5, base - (k + n) % 3 + 1)))
        with sheet.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


def download_phase(folder: Path) -> None:
    """What Codabench gives after a phase: ``bulk_submissions.zip`` of the test split's 2b answers
    (alice twice, the earlier superseded; bob once), named as the submission panel names them, and
    ``outputs/`` with a scoring output's judge archive (the judge cache's format)."""
    answers = sample_answers(folder / "release", "test")["2b"]
    with zipfile.ZipFile(folder / "bulk_submissions.zip", "w") as bulk:
        for sid, owner, records in ((101, "alice", answers[:5]), (102, "alice", answers), (103, "bob", answers)):
            bulk.writestr(f"{sid}_{owner}_PhaseId7_2027-01-20_05-3{sid % 10}_answers.jsonl",
                          "".join(json.dumps(r) + "\n" for r in records))
    (folder / "outputs" / "123").mkdir(parents=True)
    shutil.copyfile(folder / "cache" / "judge-cache.sqlite", folder / "outputs" / "123" / "judge_archive.sqlite")


def review_round(folder: Path) -> None:
    """The reviewer of the relevance round lowers the first pair at the boundary to 0, with a note."""
    path = folder / "round-review.csv"
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    first = next(r for r in rows if r["why_reviewed"].startswith("boundary"))
    first["relevance"], first["review_note"] = "0", "about another year"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def label_validation(folder: Path) -> None:
    """The reviewer of the blind validation labels every item of the sheet, 3 2 1 0 in turn."""
    path = folder / "round-validation.csv"
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    assert rows and all(r["relevance"] == "" for r in rows)
    for k, row in enumerate(rows):
        row["relevance"] = str(3 - k % 4)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


BY_HAND: dict[str, Callable[[Path], None]] = {
    "annotators fill their sheets": fill_sheets,
    "the reviewer labels the validation sheet": label_validation,
    "the reviewer corrects the round's CSV": review_round,
    "download the phase's submissions and scoring outputs": download_phase,
}


# --- the tests ------------------------------------------------------------------------------------


def test_every_block_runs_or_says_why():
    """No block is silently skipped: a block is run (its language sh/bash/console) or marked with
    a reason; a by-hand step is one this test knows how to do."""
    for block in all_blocks():
        where = f"{block.guide}:{block.line}"
        if block.not_run is not None:
            assert block.not_run, f"{where}: 'not run' without a reason"
        else:
            assert block.language in RUN_LANGUAGES, (
                f"{where}: a ```{block.language} block: tag it sh to run it, or mark it <!-- not run: reason -->")
        for step in block.by_hand:
            assert step in BY_HAND, f"{where}: unknown by-hand step {step!r}"
    assert sum(1 for b in all_blocks() if b.not_run is None) >= 5


def test_the_blocks_not_run_say_why(capsys):
    """The list of blocks the guide does not run, with their reasons (printed with -s)."""
    skipped = [b for b in all_blocks() if b.not_run is not None]
    with capsys.disabled():
        print()
        for block in skipped:
            print(f"not run: {block.guide}:{block.line}: {block.not_run}")
    assert all(b.not_run for b in skipped)


@pytest.fixture(name="organizers_folder")
def organizers_folder_fixture(tmp_path):
    """An empty folder with what the guide says the organizers provide, and a PATH whose
    ``reteco`` is this worktree's package."""
    server = FakeOpenAI()
    base_url = server.start()
    (tmp_path / "organizers").mkdir()
    (tmp_path / "organizers" / "judge.key").write_text("sk-guide-test-key\n")
    settings = {"prompt_version": 3, "model": "fake-judge", "base_url": base_url, "api_key_file": "judge.key",
                "max_retries": 2, "backoff_initial_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 10}
    (tmp_path / "organizers" / "judge.yaml").write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in settings.items()))
    bin_dir = tmp_path.parent / (tmp_path.name + "-bin")
    bin_dir.mkdir()
    shim = bin_dir / "reteco"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m reteco "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RETECO_"))}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", RETECO_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(REPO_ROOT / "src"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    try:
        yield tmp_path, env, server
    finally:
        server.stop()


@pytest.mark.slow
def test_the_guide_runs_as_written(organizers_folder):
    folder, env, server = organizers_folder
    ran = []
    for block in all_blocks():
        if block.not_run is not None:
            continue
        for step in block.by_hand:
            BY_HAND[step](folder)
        for command, expected in block.commands():
            done = subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True,
                                  timeout=COMMAND_TIMEOUT_S, stdin=subprocess.DEVNULL)
            assert done.returncode == expected, (
                f"{block.guide}:{block.line}: `{command}` exited {done.returncode}, the guide says {expected}\n"
                f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}")
            ran.append((command, done.stderr))
    assert len(ran) >= 15

    # The wrong or silent results, as the guide's commands now give them.
    report = json.loads((folder / "report" / "judge-report.json").read_text())
    configured = report["judge"]["signature"]
    assert report["judge"]["configured_model"] == "fake-judge"
    files = report["judgments"]["files"]
    assert len(files) == 2 and all(f["ran"] and f["signature"] == configured for f in files)
    assert report["agreement"]["judge_signature"] == configured
    md = (folder / "report" / "judge-report.md").read_text()
    assert "Sub-track 2b (2 details files):" in md and "None" not in md
    board = json.loads((folder / "lb" / "2b" / "leaderboard.json").read_text())
    assert len(board["systems"]) == 2 and board["unranked"] == [] and board["failed"] == []  # 2b ranked, by this judge
    # The walk from the human sample to the corrected leaderboard (issue 19): the 40 items of the
    # sample, each rated on every dimension, correct the two systems' judge means.
    corrected = json.loads((folder / "lb-human" / "leaderboard.json").read_text())["human_corrected"]
    assert corrected["judge_signatures"] == [configured] and corrected["ratings"]["raters"] == 3
    means = [system["figures"]["judge_mean"] for system in corrected["systems"]]
    assert sum(m["n_rated"] for m in means) == corrected["ratings"]["items"] == 40
    assert all(m["ci_low"] <= m["estimate"] <= m["ci_high"] and m["n_judged"] == 51 for m in means)
    assert len(corrected["ranking"]["systems"]) == 2
    human_report = json.loads((folder / "report-human" / "judge-report.json").read_text())
    assert human_report["system_scores"]["same_judge"] is True
    judged = list((folder / "judged").glob("judged_submissions_2b.*"))
    assert {p.suffix for p in judged} == {".csv", ".md"}
    teams = [row["team"] for row in csv.DictReader((folder / "judged" / "judged_submissions_2b.csv").open())]
    assert sorted(teams) == ["alice", "bob"]  # alice's earlier submission superseded
    (log,) = [err for command, err in ran if command.startswith("reteco judge-submissions")]
    assert f"cache: {folder / 'cache'} ($RETECO_CACHE_DIR)" in log  # not "the default cache"
    assert server.chat_calls > 0  # the judge was the test server, reached through the guide's config
    # The relevance round's blind validation (issue 34): 10 sampled pairs and 5 known-relevant, rated blind.
    validation = json.loads((folder / "lb-round" / "1a" / "leaderboard.json").read_text())["round"]["validation"]
    assert validation["items"] == {"sample": 10, "sample_rated": 10, "known_relevant": 5}
    assert validation["agreement"]["pairs"] == 10 and validation["recall_known"]["llm"]["pairs"] == 5
    assert validation["reviewers"] == ["A. Reviewer"]
