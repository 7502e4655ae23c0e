"""A deterministic synthetic release in the organizers' v1.1 layout (``reteco.formats.release``).

It lets the project run end to end and be tested without downloading TEMPO or RECOR. The
texts are invented, but the files have the real shapes and carry every trap a release can
carry:

- Track 2 conversation ids that are bare integers and collide across domains in one split
  (conversation "2" of dev exists in biology and in earth_science), beside "ex_<digits>" ids;
- BRIGHT-style document ids without a domain prefix ("<page slug>/<Title>_<n>.txt") in the
  BRIGHT-derived domains, "<domain>_ex_<n>_doc_<k>" ids in the others;
- the folder ``drones`` whose benchmark "task" field spells "Drones";
- a ``duplicate_map.json`` in every Track 1 domain whose removed (v1.0) ids are absent from
  ``documents.jsonl`` and map to ids that are present;
- many negative documents per corpus (about six per gold document), some of them hard
  negatives that share a topic's words but not its period (Track 1) or its facet (Track 2).

Texts are built so that a lexical ranker finds gold documents well above chance but not
perfectly (BM25 nDCG@10 about 0.45-0.6 on dev): each topic owns a few invented words shared by
its query and its gold documents, gold documents drop some of them at random, hard negatives
borrow them, and gold documents often date events relatively ("3 years after 2011") so that
matching year tokens is not enough. Track 2 follow-up turns are elliptical, so the history
helps a retriever. The guidance records each gold passage's resolved time scope.

Determinism: every domain draws from its own ``random.Random`` seeded with a string derived
from the seed (string seeds are hashed with SHA-512, independent of PYTHONHASHSEED), nothing
iterates over a set, and JSON is written with sorted keys and fixed separators. The same seed
gives byte-identical files.
"""

from __future__ import annotations

import json
from pathlib import Path

from reteco.release.synthetic.invented_text import SPLITS
from reteco.release.synthetic.track1_tempo import TRACK1_DOMAINS, track1_domain_files
from reteco.release.synthetic.track2_recor import TRACK2_DOMAINS, conversation_plan, track2_domain_files

DEFAULT_SEED = 20270110
TRACK1_DIR = "track1_tempo"
TRACK2_DIR = "track2_recor"


def write_synthetic_release(out: Path, seed: int = DEFAULT_SEED, scale: int = 1) -> Path:
    """Write a small synthetic train/dev/test release in the v1.1 layout under ``out``;
    ``scale`` N gives N times the queries and conversations per domain and split (a rehearsal
    at the test set's real size: ``reteco synth --scale``), with ids that never collide (every
    id is drawn against those taken; ``tests/support/synthetic_ids.py`` checks it). Scale 1 is the default release, byte
    for byte.

    ``out/track1_tempo/<domain>/`` holds documents, examples, steps, guidance, qrels, step
    qrels and a duplicate map per split; ``out/track2_recor/<domain>/`` holds documents,
    benchmark (a JSON array of conversations) and qrels per split. Existing files of the same
    names are overwritten; nothing else is removed. The same ``seed`` gives byte-identical
    files. Returns ``out``.
    """
    out = Path(out)
    taken_qids: set[str] = set()
    for spec in TRACK1_DOMAINS:
        _write_files(out / TRACK1_DIR / spec.name, track1_domain_files(spec, seed, taken_qids, scale))
    plan = conversation_plan(seed, scale)
    for spec in TRACK2_DOMAINS:
        _write_files(out / TRACK2_DIR / spec.folder, track2_domain_files(spec, seed, plan[spec.folder]))
    return out


def release_sizes(release: Path) -> dict[str, tuple[int, int]]:
    """Per split, (Track 1 queries, Track 2 turns) of a release written here."""
    sizes = {}
    for split in SPLITS:
        queries = sum(1 for p in sorted((Path(release) / TRACK1_DIR).glob(f"*/examples_{split}.jsonl"))
                      for line in p.read_text(encoding="utf-8").splitlines() if line.strip())
        turns = sum(len(conversation["turns"]) for p in sorted((Path(release) / TRACK2_DIR).glob(f"*/benchmark_{split}.json"))
                    for conversation in json.loads(p.read_text(encoding="utf-8")))
        sizes[split] = (queries, turns)
    return sizes


def _write_files(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in sorted(files):
        # newline="" keeps "\n" on every platform, so files stay byte-identical.
        with open(folder / name, "w", encoding="utf-8", newline="") as handle:
            handle.write(files[name])
