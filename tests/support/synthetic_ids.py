"""What collides in a synthetic release (``reteco synth``): the tests' check that ``--scale``
draws every id against those taken."""

from __future__ import annotations

import json
from pathlib import Path

from reteco.release.synthetic.invented_text import SPLITS
from reteco.release.synthetic.release import TRACK1_DIR, TRACK2_DIR


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def check_unique_ids(release: Path) -> list[str]:
    """What collides in a release (empty: nothing): per domain, document ids; per split, Track 1
    query ids and Track 2 turn keys (domain, conversation, turn)."""
    problems = []
    for track in (TRACK1_DIR, TRACK2_DIR):
        for documents in sorted((Path(release) / track).glob("*/documents.jsonl")):
            ids = [r.get("id", r.get("doc_id")) for r in _records(documents)]
            if len(ids) != len(set(ids)):
                problems.append(f"{documents}: {len(ids) - len(set(ids))} repeated document ids")
    for split in SPLITS:
        qids = [r["id"] for p in sorted((Path(release) / TRACK1_DIR).glob(f"*/examples_{split}.jsonl")) for r in _records(p)]
        if len(qids) != len(set(qids)):
            problems.append(f"{split}: {len(qids) - len(set(qids))} repeated Track 1 query ids")
        keys = [(p.parent.name, c["id"], t["turn_id"]) for p in sorted((Path(release) / TRACK2_DIR).glob(f"*/benchmark_{split}.json"))
                for c in json.loads(p.read_text(encoding="utf-8")) for t in c["turns"]]
        if len(keys) != len(set(keys)):
            problems.append(f"{split}: {len(keys) - len(set(keys))} repeated Track 2 turns")
    return problems
