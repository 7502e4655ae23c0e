"""Ratings keyed by item code (a blind human sample) read through the organizers' key file, and
several annotators' files as one set of ratings (``reteco.formats.ratings``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reteco.formats.ratings import merge_ratings, read_item_key, read_ratings
from reteco.problems import InputError

KEY = "item_id,conversation_id,system,submission\nitem-1,c1,sysA,sysA.jsonl\nitem-2,c2,sysB,sysB.zip\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error(call) -> str:
    with pytest.raises(InputError) as caught:
        call()
    return str(caught.value)


def test_a_keyed_sheet_gets_its_conversation_and_system_from_the_key(tmp_path):
    key = read_item_key(write(tmp_path, "key.csv", KEY))
    sheet = write(tmp_path, "s.csv", "item_id,dimension,rater,score\nitem-2,coherence,ann1,4\nitem-1,coherence,ann1,2\n")
    ratings = read_ratings(sheet, key=key)
    assert [(r.item_id, r.conversation_id, r.system, r.score) for r in ratings.rows] == [
        ("item-2", "c2", "sysB", 4), ("item-1", "c1", "sysA", 2)]
    assert ratings.has_system


def test_a_keyed_sheet_is_checked_against_the_key_line_by_line(tmp_path):
    key = read_item_key(write(tmp_path, "key.csv", KEY))
    sheet = write(tmp_path, "s.csv", "item_id,conversation_id,dimension,rater,score\n"
                  "item-1,c1,coherence,a,3\nitem-9,c1,coherence,a,3\nitem-2,c1,coherence,a,3\n")
    assert error(lambda: read_ratings(sheet, key=key)).replace(str(tmp_path) + "/", "").splitlines() == [
        "s.csv:3: error: item 'item-9' is not in the key key.csv",
        "s.csv:4: error: item 'item-2' has conversation_id 'c1' here but 'c2' in the key key.csv",
    ]


@pytest.mark.parametrize("text, message", [
    ("item_id,system\ni,s\n", "key.csv:1: error: missing column conversation_id"),
    ("item_id,conversation_id,system\ni,c,s\ni,c,s\n", "key.csv:3: error: item 'i' is already in the key (line 2)"),
    ("item_id,conversation_id,system\ni,,s\n", "key.csv:2: error: empty conversation_id"),
    ("item_id,conversation_id,system\n", "key.csv:1: error: no items"),
    ("", "key.csv:1: error: the file is empty"),
])
def test_a_key_that_cannot_be_used_is_named_by_line(tmp_path, text, message):
    path = write(tmp_path, "key.csv", text)
    assert error(lambda: read_item_key(path)).replace(str(tmp_path) + "/", "").startswith(message)


def test_annotators_files_merge_and_a_repeated_rating_is_named(tmp_path):
    key = read_item_key(write(tmp_path, "key.csv", KEY))
    one = read_ratings(write(tmp_path, "one.csv", "item_id,dimension,rater,score\nitem-1,coherence,ann1,3\n"), key=key)
    two = read_ratings(write(tmp_path, "two.csv", "item_id,dimension,rater,score\nitem-1,coherence,ann2,4\n"), key=key)
    merged = merge_ratings([one, two])
    assert merged.raters() == ["ann1", "ann2"] and len(merged.rows) == 2
    again = read_ratings(write(tmp_path, "again.csv", "item_id,dimension,rater,score\nitem-1,coherence,ann1,5\n"), key=key)
    assert error(lambda: merge_ratings([one, again])) == (
        f"{tmp_path / 'again.csv'}:2: error: item 'item-1' already has a coherence score by rater 'ann1' in "
        f"{tmp_path / 'one.csv'} line 2")
