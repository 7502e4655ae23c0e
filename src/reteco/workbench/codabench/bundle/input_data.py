"""Input data of a code-submission task: one split of the release, without its labels.

A participant's program (run by the ingestion program) reads this folder exactly as it would
read the organizers' release: same layout, same file names, only the split's files, with
every label removed:

- Track 1: ``documents.jsonl`` and ``duplicate_map.json`` as they are; ``examples_<split>``
  without ``gold_ids``/``gold_answers``; ``steps_<split>`` without any ``gold_ids``; no qrels,
  no guidance (its gold passage annotations are labels).
- Track 2: ``documents.jsonl``; ``benchmark_<split>`` keeping per conversation ``id`` and
  ``task``, per turn ``turn_id``, ``query`` and ``conversation_history``. Sub-track 2b also keeps
  ``gold_doc_ids``: the gold passages are 2b's input. They are 2a/2c's labels for the same
  turns, so a phase must not offer 2b as a code submission while 2a/2c's labels of those turns
  are hidden.

``task.json`` at the root names the sub-track and the split.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from reteco.formats import release as rel
from reteco.subtracks import GOLD, SUBTRACKS

TASK_FILE = "task.json"
INPUT_FORMAT = "reteco-input/1"
_TRACK1_LABELS = ("gold_ids", "gold_answers")
_TURN_FIELDS = ("turn_id", "query", "conversation_history")


def write_input_data(release: Path, split: str, subtrack: str, dest: Path) -> Path:
    """Write the label-free input of ``subtrack``'s track for ``split`` into ``dest``."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    track = rel.TRACK1_DIR if SUBTRACKS[subtrack].track == 1 else rel.TRACK2_DIR
    source = release / track
    layout = rel.detect_layout(source)
    if layout is None:
        raise FileNotFoundError(f"no {track} data in {release}")
    places = rel.domain_dirs(source) if layout == rel.RELEASE else {"": source}
    keep_gold = SUBTRACKS[subtrack].evidence == GOLD  # 2b generates from the gold passages: they are its input
    for folder in places.values():
        target = dest / track / folder.relative_to(source)
        target.mkdir(parents=True, exist_ok=True)
        for name in ("documents.jsonl", "duplicate_map.json"):
            if (folder / name).is_file():
                shutil.copyfile(folder / name, target / name)
        if track == rel.TRACK1_DIR:
            for stem in ("examples", "steps"):
                path = rel.find_file(folder, stem, split, (".jsonl",), layout)
                if path is not None:
                    _rewrite_jsonl(path, target / path.name, _strip_track1)
        else:
            path = rel.find_file(folder, "benchmark", split, (".json", ".jsonl"), layout)
            if path is not None:
                _rewrite_benchmark(path, target / path.name, lambda c: _strip_conversation(c, keep_gold))
    (dest / TASK_FILE).write_text(
        json.dumps({"format": INPUT_FORMAT, "subtrack": subtrack, "split": split}, indent=2) + "\n", encoding="utf-8"
    )
    return dest


def _strip_track1(record: dict) -> dict:
    out = {k: v for k, v in record.items() if k not in _TRACK1_LABELS}
    if isinstance(out.get("steps"), list):
        out["steps"] = [
            {k: v for k, v in step.items() if k != "gold_ids"} if isinstance(step, dict) else step
            for step in out["steps"]
        ]
    return out


def _strip_conversation(record: dict, keep_gold: bool) -> dict:
    fields = _TURN_FIELDS + (("gold_doc_ids",) if keep_gold else ())
    turns = [
        {k: turn[k] for k in fields if k in turn} if isinstance(turn, dict) else turn
        for turn in record.get("turns", [])
    ]
    return {k: record[k] for k in ("id", "task") if k in record} | {"turns": turns}


def _rewrite_jsonl(source: Path, dest: Path, strip) -> None:
    with open(source, encoding="utf-8-sig") as src, open(dest, "w", encoding="utf-8", newline="\n") as out:
        for line in src:
            if line.strip():
                out.write(json.dumps(strip(json.loads(line)), ensure_ascii=False) + "\n")


def _rewrite_benchmark(source: Path, dest: Path, strip) -> None:
    if source.suffix == ".jsonl":
        _rewrite_jsonl(source, dest, strip)
        return
    records = json.loads(source.read_text(encoding="utf-8-sig"))
    dest.write_text(json.dumps([strip(r) for r in records], ensure_ascii=False) + "\n", encoding="utf-8")
