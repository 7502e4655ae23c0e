"""Judge archives: a cache exported as one file (what the Codabench scoring program leaves in its
output) and merged into another (``reteco judge --import-archive``), so that the same requests
to the same endpoint are answered without a call."""

from __future__ import annotations

import dataclasses
import sqlite3
import zipfile

import pytest
from support.fake_openai_server import FakeOpenAI, judgment

from reteco.commands import main
from reteco.judge import JudgeItem, run_judge
from reteco.llm.cache import ARCHIVE_FILE, CACHE_FILE, JudgeCache, JudgeCacheError

ITEMS = [JudgeItem(f"law/{i}_turn_1", d, f"question {i}", "", f"answer {i}", (), "")
         for i in range(4) for d in ("relevance", "coherence")]


def judged(config, cache_dir, items=ITEMS):
    return run_judge(items, config, cache_dir=cache_dir, progress=False)


def export(cache_dir, dest):
    with JudgeCache(cache_dir) as cache:
        cache.export_archive(dest)
    return dest


def rows(cache_dir, table):
    conn = sqlite3.connect(cache_dir / CACHE_FILE)
    try:
        return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]  # noqa: S608 (test tables)
    finally:
        conn.close()


def test_an_imported_archive_answers_the_same_requests_without_a_call(judge_config, fake_openai, tmp_path):
    first = judged(judge_config, tmp_path / "platform")
    archive = export(tmp_path / "platform", tmp_path / "out" / ARCHIVE_FILE)
    assert not (tmp_path / "out" / (ARCHIVE_FILE + "-wal")).exists()
    with JudgeCache(tmp_path / "organizers") as cache:
        merged = cache.import_archive(archive)
    assert (merged.judgments_imported, merged.judgments_present, merged.judgments_conflicting) == (8, 0, ())
    assert merged.calls_imported == 9 and merged.requests_imported == 9  # 8 judgments + the preflight
    calls = fake_openai.all_chat_calls
    again = judged(judge_config, tmp_path / "organizers")
    assert fake_openai.all_chat_calls == calls  # not paid twice
    assert [(o.status, o.score, o.rationale) for o in again] == [(o.status, o.score, o.rationale) for o in first]
    assert all(o.cached for o in again) and {o.reported_model for o in again} == {"fake-judge"}
    assert {o.system_fingerprint for o in again} == {"fp_fake_1"}


def test_importing_twice_adds_nothing(judge_config, fake_openai, tmp_path):
    judged(judge_config, tmp_path / "platform")
    archive = export(tmp_path / "platform", tmp_path / ARCHIVE_FILE)
    with JudgeCache(tmp_path / "organizers") as cache:
        cache.import_archive(archive)
        counts = {t: rows(tmp_path / "organizers", t) for t in ("requests", "calls", "failures", "judgments")}
        again = cache.import_archive(archive)
    assert (again.judgments_imported, again.judgments_present, again.calls_imported, again.calls_present) == (0, 8, 0, 9)
    assert {t: rows(tmp_path / "organizers", t) for t in counts} == counts


def test_imported_verdicts_keep_their_own_calls_when_the_ids_shift(judge_config, fake_openai, tmp_path):
    """The organizers' cache already holds calls of another server: the archive's call ids are
    renumbered, and each verdict still names the reply that made it."""
    other = FakeOpenAI()
    other.judge = lambda body: judgment(3, "other server", model="other-model")
    other.start()
    try:
        judged(dataclasses.replace(judge_config, base_url=other.base_url), tmp_path / "organizers")
    finally:
        other.stop()
    judged(judge_config, tmp_path / "platform")
    with JudgeCache(tmp_path / "organizers") as cache:
        cache.import_archive(export(tmp_path / "platform", tmp_path / ARCHIVE_FILE))
    again = judged(judge_config, tmp_path / "organizers")
    assert all(o.cached for o in again) and {o.reported_model for o in again} == {"fake-judge"}


def test_a_different_verdict_in_an_archive_is_a_conflict_and_the_cache_keeps_its_own(judge_config, fake_openai, tmp_path):
    first = judged(judge_config, tmp_path / "organizers")
    archive = export(tmp_path / "organizers", tmp_path / ARCHIVE_FILE)
    conn = sqlite3.connect(archive)
    conn.execute("UPDATE judgments SET score = 6 - score, rationale = 'changed' WHERE cache_key = ?", (first[0].cache_key,))
    conn.commit()
    conn.close()
    with JudgeCache(tmp_path / "organizers") as cache:
        merged = cache.import_archive(archive)
        kept = cache.judgment(first[0].cache_key)
    assert merged.judgments_conflicting == (first[0].cache_key,) and merged.judgments_present == 7
    assert (kept.score, kept.rationale) == (first[0].score, first[0].rationale)


def test_a_file_that_is_not_an_archive_is_refused(tmp_path):
    (tmp_path / "notes.sqlite").write_bytes(b"not sqlite at all, just text" * 10)
    sqlite3.connect(tmp_path / "other.sqlite").execute("CREATE TABLE t(x)").connection.commit()
    with JudgeCache(tmp_path / "cache") as cache:
        with pytest.raises(JudgeCacheError, match="is not a judge archive"):
            cache.import_archive(tmp_path / "notes.sqlite")
        with pytest.raises(JudgeCacheError, match="is not a judge archive: no table calls, failures, judgments, meta, requests"):
            cache.import_archive(tmp_path / "other.sqlite")
        with pytest.raises(JudgeCacheError, match="no judge archive"):
            cache.import_archive(tmp_path / "missing.sqlite")


def test_the_command_imports_a_scoring_output_zip_and_says_what_it_merged(judge_config, fake_openai, tmp_path, capsys):
    judged(judge_config, tmp_path / "platform")
    output = tmp_path / "scoring_output.zip"  # the scoring output as downloaded: the archive at its root
    with zipfile.ZipFile(output, "w") as z:
        z.write(export(tmp_path / "platform", tmp_path / ARCHIVE_FILE), ARCHIVE_FILE)
        z.writestr("scores.json", "{}")
    assert main(["judge", "--import-archive", str(output), "--cache", str(tmp_path / "organizers")]) == 0
    err = capsys.readouterr().err
    assert f"{output}:{ARCHIVE_FILE}: 8 judgments imported, 0 already in the cache, 0 in conflict" in err
    assert main(["judge", "--import-archive", str(tmp_path), "--cache", str(tmp_path / "organizers")]) == 0
    assert "0 judgments imported, 8 already in the cache" in capsys.readouterr().err  # a folder: every archive in it


def test_the_command_refuses_what_is_no_archive_and_says_when_nothing_was_judged(tmp_path, capsys):
    empty = tmp_path / "output.zip"
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("scores.json", "{}")
    # A scoring output without an archive: the platform judged nothing; said, exit 0 (a set -e script goes on).
    assert main(["judge", "--import-archive", str(empty), "--cache", str(tmp_path / "c")]) == 0
    assert f"{empty}: warning: no {ARCHIVE_FILE} in this zip: the platform judged nothing here" in capsys.readouterr().err
    outputs = tmp_path / "outputs"
    (outputs / "1").mkdir(parents=True)
    (outputs / "1" / "scores.json").write_text("{}")
    assert main(["judge", "--import-archive", str(outputs), "--cache", str(tmp_path / "c")]) == 0
    assert "nothing imported" in capsys.readouterr().err
    assert main(["judge", "--import-archive", str(tmp_path / "missing"), "--cache", str(tmp_path / "c")]) == 1
    assert "no such file" in capsys.readouterr().err
    (tmp_path / "x.txt").write_text("hello")
    assert main(["judge", "--import-archive", str(tmp_path / "x.txt"), "--cache", str(tmp_path / "c")]) == 1
    assert "is not a judge archive" in capsys.readouterr().err
    assert main(["judge", "--golden"]) == 2  # --out is required to judge
    assert "--out is required" in capsys.readouterr().err
