"""Benchmark: the WordNet a 2b scoring process loads for METEOR, nltk's reader against the prepared map.

Each round is two fresh child processes, one per way of reading WordNet, alternating: the child
imports nltk's METEOR first (what every 2b/2c scoring process loads, whichever WordNet it reads;
timed apart), then scores the starting kit's 2b sample against the synthetic release's 2b
reference (``score_submission``, the judge not run), timing inside it:

- ``load``: ``load_wordnet`` (``nltk``: nltk's ``WordNetCorpusReader`` parsing WordNet's text
  files, what every scoring process did before the map; ``map``: the prepared map
  ``reteco-wordnet-map.sqlite``);
- ``meteor``: the whole of METEOR's values over the 51 turns, the load included (the map answers
  each word by a query; nltk's reader parses each synset's data line on first use);
- ``score``: the whole ``score_submission``;

and the parent times the child process's wall (interpreter start, imports and exit included).
METEOR's figure is printed for both: it must be the same.

With ``--check-words`` it first compares the map's ``synsets(word)`` (byte offsets and lemma
names, in order) with nltk's reader's for every lemma of WordNet's four index files, every form
of its four exception lists, and each lemma with ten suffixes (s, es, ed, ing, er, est, ies, men,
ves, d), about 1.7 million words (2-3 minutes), and prints how many differ.

    .venv/bin/python bench/bench_wordnet_load.py                # 5 rounds
    .venv/bin/python bench/bench_wordnet_load.py --rounds 9 --out /tmp/bwn
    .venv/bin/python bench/bench_wordnet_load.py --check-words --rounds 0
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SAMPLE = REPO / "starting_kit" / "sample_submissions" / "2b"

CHILD = r"""
import json, sys, time
mode, ref, sample = sys.argv[1:4]
started = time.perf_counter()
import nltk.translate.meteor_score  # noqa: F401 - loaded by METEOR in every 2b/2c process
timing = {"nltk_import": time.perf_counter() - started}
from reteco.formats import wordnet
from reteco.formats.reference import Reference
from reteco.metrics import text_overlap
from reteco.scoring.submission import score_submission

load_wordnet, meteor_values = wordnet.load_wordnet, text_overlap.meteor_values


def timed_load(path=None):
    began = time.perf_counter()
    reader, info = load_wordnet(path, prepared=mode == "map")
    timing["load"] = time.perf_counter() - began
    timing["read_from"] = info["read_from"]
    return reader, info


def timed_meteor(*args, **kwargs):
    began = time.perf_counter()
    result = meteor_values(*args, **kwargs)
    timing["meteor"] = time.perf_counter() - began
    return result


text_overlap.load_wordnet, text_overlap.meteor_values = timed_load, timed_meteor
reference = Reference.read(ref)
began = time.perf_counter()
result = score_submission(reference, sample, run_judge_now=False)
timing["score"] = time.perf_counter() - began
timing["meteor_figure"] = result.scores["meteor"]
print(json.dumps(timing))
"""


def reference(out: Path) -> Path:
    """The synthetic release's 2b reference (dev split), prepared once into ``out``."""
    ref = out / "ref"
    if not (ref / "2b").is_dir():
        sys.path.insert(0, str(REPO / "src"))
        from reteco.release.prepare import prepare_release
        from reteco.release.synthetic.release import write_synthetic_release

        release = write_synthetic_release(out / "release")
        prepare_release(release, "dev", ref, subtracks=("2b",))
    return ref / "2b"


def one(mode: str, ref: Path) -> dict:
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, mode, str(ref), str(SAMPLE)], capture_output=True, text=True,
                          check=True)
    timing = json.loads(done.stdout.strip().splitlines()[-1])
    timing["process"] = time.perf_counter() - began
    return timing


def check_words() -> None:
    """The map against nltk's reader over WordNet's whole vocabulary and inflected forms of it."""
    sys.path.insert(0, str(REPO / "src"))
    from reteco.formats.wordnet import default_wordnet_dir, load_wordnet

    folder = default_wordnet_dir()
    prepared, info = load_wordnet(folder)
    nltk_reader, _ = load_wordnet(folder, prepared=False)
    assert info["read_from"] == "prepared map", info
    lemmas, forms = set(), set()
    for pos in ("noun", "verb", "adj", "adv"):
        lemmas |= {line.split()[0] for line in (folder / f"index.{pos}").read_text().splitlines() if not line.startswith(" ")}
        forms |= {w for line in (folder / f"{pos}.exc").read_text().splitlines() for w in line.split()}
    words = lemmas | forms | {lemma + s for lemma in lemmas for s in ("s", "es", "ed", "ing", "er", "est", "ies", "men",
                                                                      "ves", "d")}
    began = time.perf_counter()
    differ = [w for w in sorted(words) if [(s.offset(), [x.name() for x in s.lemmas()]) for s in prepared.synsets(w)]
              != [(s.offset(), [x.name() for x in s.lemmas()]) for s in nltk_reader.synsets(w)]]
    print(f"{len(words):,} words ({len(lemmas):,} index lemmas, {len(forms):,} exception forms, the rest suffixed): "
          f"{len(differ)} answer differently ({time.perf_counter() - began:.0f} s){': ' + ', '.join(differ[:20]) if differ else ''}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=HERE / "out" / "wordnet")
    parser.add_argument("--check-words", action="store_true", help="compare the map with nltk's reader word by word first")
    args = parser.parse_args()
    if args.check_words:
        check_words()
    if args.rounds < 1:
        return
    ref = reference(args.out)
    runs: dict[str, list[dict]] = {"nltk": [], "map": []}
    for n in range(args.rounds):
        for mode in ("nltk", "map") if n % 2 == 0 else ("map", "nltk"):
            runs[mode].append(one(mode, ref))
    figures = {mode: {r["meteor_figure"] for r in rs} for mode, rs in runs.items()}
    print(f"METEOR of the 2b sample: nltk's reader {figures['nltk']}, the map {figures['map']}")
    assert len(figures["nltk"]) == 1 and figures["nltk"] == figures["map"], "the two readers disagree"
    keys = ("load", "meteor", "score", "nltk_import", "process")
    print(f"\n{args.rounds} rounds, medians (min-max), seconds\n")
    print("| WordNet read from | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    for mode, label in (("nltk", "nltk's reader (before)"), ("map", "prepared map (after)")):
        cells = []
        for key in keys:
            values = [r[key] for r in runs[mode]]
            cells.append(f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})")
        print(f"| {label} | " + " | ".join(cells) + " |")
        assert {r["read_from"] for r in runs[mode]} == {"nltk's reader" if mode == "nltk" else "prepared map"}


if __name__ == "__main__":
    main()
