"""The frozen temporal labels read while another process appends to them: readers take a shared
lock, writers an exclusive one, so a read sees the folder before or after a change, never
halfway (a 1a leaderboard run during an append left 9 of 12 teams "not scored", blamed on
labels.jsonl, exit 0). A lock held past the wait is a clear error for the organizers, exit 1,
never a team's. These tests meet processes and locks: run them under CPU load too."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from reteco.commands import main
from reteco.formats import temporal_labels
from reteco.formats.temporal_labels import LABELS_DIR, LOCK_FILE, LabelRow, LabelsBusyError, TemporalLabels
from reteco.formats.temporal_periods import PERIODS_FILE, Period, QueryPeriods, read_periods
from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import write_synthetic_release
from reteco.release.synthetic.sample_runs import write_sample_runs
from reteco.workbench.leaderboard.standings import Entry, ScoringOptions, score_entries

PERIODS = [QueryPeriods("d/q1", "When?", (Period("p1", "q1_step1", "in 2016"),), ("2016",), True)]

# Appends one LLM verdict at a time, each by a fresh read (as `reteco label-temporal` does per
# batch), until the stop file appears; prints how many it appended.
WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from reteco.formats.temporal_labels import LabelRow, TemporalLabels

    root, query, stop = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    n = 0
    while not stop.exists() or n < 20:
        labels = TemporalLabels.read(root)
        row = LabelRow(query, f"appended-{n}.txt", n % 2 == 0, (), "llm", "model-x", "2027-01-20T10:00:00Z", "v1")
        labels.append([row], f"append {n}")
        n += 1
    print(n)
""")


def _start_writer(root: Path, query: str, stop: Path) -> subprocess.Popen:
    source = str(Path(temporal_labels.__file__).parents[2])
    return subprocess.Popen([sys.executable, "-c", WRITER, str(root), query, str(stop)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={"PYTHONPATH": source, "PATH": "/usr/bin:/bin"})


def _finish(writer: subprocess.Popen, stop: Path) -> int:
    stop.touch()
    out, err = writer.communicate(timeout=300)
    assert writer.returncode == 0, err
    return int(out)


@pytest.mark.slow
def test_a_reader_never_sees_an_append_halfway(tmp_path):
    root = tmp_path / "labels"
    TemporalLabels.create(root, PERIODS, "test", "created")
    stop = tmp_path / "stop"
    writer = _start_writer(root, "d/q1", stop)
    seen: list[int] = []
    deadline = time.monotonic() + 240
    try:
        # Read over and over while at least 40 appends land (each a rewrite of both files).
        while len(set(seen)) < 40 and time.monotonic() < deadline and writer.poll() is None:
            labels = TemporalLabels.read(root)  # an InputError here is a torn read
            seen.append(len(labels.rows))
    finally:
        appended = _finish(writer, stop)
    assert len(set(seen)) >= 40, f"only {len(set(seen))} states seen"
    assert seen == sorted(seen)
    assert len(TemporalLabels.read(root).rows) == appended


@pytest.fixture(scope="module")
def labelled_1a(tmp_path_factory):
    """A test-split 1a reference with a frozen label folder, and a run over its queries."""
    root = tmp_path_factory.mktemp("locked")
    write_synthetic_release(root / "release")
    write_sample_runs(root / "release", root / "runs", split="test")
    prepare_release(root / "release", "test", root / "ref", subtracks=("1a",))
    ref = root / "ref" / "1a"
    periods = read_periods(ref / PERIODS_FILE)
    labels = TemporalLabels.create(ref / LABELS_DIR, periods.values(), "test", "created")
    query = next(iter(periods))
    labels.append([LabelRow(query, "seed.txt", True, (), "llm", "model-x", "2027-01-20T10:00:00Z", "v1")], "seed")
    return ref, query, root / "runs" / "1a" / "run.txt"


def test_a_leaderboard_during_appends_scores_every_team(labelled_1a, tmp_path):
    pristine, query, run = labelled_1a
    ref = tmp_path / "1a"
    shutil.copytree(pristine, ref)
    entries = []
    for k in range(12):
        (tmp_path / f"team{k}.txt").write_bytes(run.read_bytes())
        entries.append(Entry(tmp_path / f"team{k}.txt", f"team{k}.txt", f"team{k}", ""))
    stop = tmp_path / "stop"
    writer = _start_writer(ref / LABELS_DIR, query, stop)
    try:
        outcomes = score_entries(ref, entries, ScoringOptions(run_judge_now=False), jobs=1, progress=False)
    finally:
        _finish(writer, stop)
    assert [o.get("errors") for o in outcomes if not o["ok"]] == []


def test_a_lock_held_past_the_wait_is_the_organizers_error_not_a_teams(labelled_1a, tmp_path, monkeypatch, capsys):
    pristine, _, run = labelled_1a
    ref = tmp_path / "1a"
    shutil.copytree(pristine, ref)
    submissions = tmp_path / "subs"
    submissions.mkdir()
    for team in ("alice", "bob"):
        (submissions / f"{team}.txt").write_bytes(run.read_bytes())
    monkeypatch.setattr(temporal_labels, "LOCK_WAIT_S", 0.3)
    folder = ref / LABELS_DIR
    with open(folder / LOCK_FILE, "a+b") as held:  # a writer in the middle of a change
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        with pytest.raises(LabelsBusyError, match="another process is writing the temporal labels"):
            TemporalLabels.read(folder)
        status = main(["leaderboard", "--ref", str(ref), "--submissions", str(submissions), "--out",
                       str(tmp_path / "board"), "--jobs", "1", "--no-judge"])
    err = capsys.readouterr().err
    assert status == 1, err
    assert f"{folder}: error: another process is writing the temporal labels (it has held .lock for more than 0.3 s)" \
        in err
    assert "not scored" not in err and "Traceback" not in err
    assert not (tmp_path / "board").exists() or not any((tmp_path / "board").iterdir())
