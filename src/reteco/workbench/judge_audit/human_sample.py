"""The sample of judged answers that humans rate, to spot-validate the judge (``reteco human-sample``).

Why one module: the draw, its inclusion probabilities, the blind files and the key are one
contract. The key's item codes and ``inclusion_probability`` column, the sheets' and context
files' orders and the record's strata are all written from the same drawn items, and the
leaderboard's estimates weigh each rating by what this module recorded; split, the designs and
the files that disclose them could drift apart.

Items are (system, target turn) pairs of a 2b or 2c reference that the system answered (an
unanswered turn scores 0 by rule: there is nothing to rate). Two designs, seeded and
reproducible, each recording every item's **inclusion probability** (the key's
``inclusion_probability`` column, the record's strata), which ``leaderboard --human-ratings``
weighs by (issue 32):

**paired** (``--design paired --turns K``, ``PAIRED_RULE``): K turns drawn among the M turns some
system answered, by systematic sampling with a random start over them in domain x depth order
(a seeded random order within): each turn's inclusion probability is exactly K / M, each
domain x depth stratum gets the floor or the ceiling of its share, none is excluded by rule; and
every sampled turn is an item for every system that answered it, as a TREC pool is judged for
all runs: two systems' corrected figures are then compared on the same turns (a paired difference).
When the budget cannot cover every system on every turn, ``--systems-per-turn m`` rates a uniform
random m of the S_t systems that answered turn t (probability K/M x m/S_t per item, recorded):
pairs then share fewer turns, and the leaderboard compares them as independent samples.

**stratified** (the default, ``--n N`` items), by **domain x turn depth (T1 ... T5+) x system**:

- allocation (``allocate``): proportional with at least one item per stratum where possible.
  With N items in all, N_h in stratum h and n to draw, the quota of h is q_h = n N_h / N.
  When n >= the number of strata H, each stratum gets max(1, floor(q_h)) items; while that
  sums to more than n, the stratum with more than one item that is furthest above its quota
  (a_h - q_h largest) gives one back; while it sums to less, the stratum with room
  (a_h < N_h) furthest below its quota (q_h - a_h largest) gets one more (Hamilton's largest
  remainder method). Ties are broken by a seeded random order of the strata. n >= N takes every
  item. A stratum's inclusion probability is a_h / N_h (unequal: the estimates weigh by it).
  When n < H, one per stratum is impossible: the items are drawn by systematic sampling with a
  random start over all N in stratum order (``systematic``), each with probability n / N, so no
  stratum is left out by rule (the largest-remainder rule alone used to leave whole depths out).
- within a stratum, a_h items drawn uniformly without replacement (``random.Random(seed)``,
  candidates in sorted (turn, system) order, so the draw does not depend on file order);
- the items are numbered ``item-0001`` ... in a seeded random order (items of one system or
  conversation are not grouped): the **item code**, the only name an annotator sees.

The sample is **blind**: annotators see item codes only, never a system, a submission, a
conversation id or a turn id. Files written (``reteco human-sample --out DIR``):

- for each annotator (``--annotators``), in ``DIR/annotators/<name>/``, what is handed to them:

  - the **rating sheet** (``sheet.csv``, ``write_sheet``): ``item_id,dimension,rater,score``,
    one row per item x dimension, ``rater`` filled with the annotator's name and ``score``
    empty (they write an integer 1..5). The items come in an order of their own, shuffled per
    annotator (``annotator_order``: seeded by the seed and the annotator's name, so it is
    reproducible and two annotators do not rate in one order). It holds item codes and
    dimension names only: nothing of the reference data;
  - the **context file** (``context.jsonl``, ``write_context``, one object per item, in the
    sheet's order): what the annotator must see to rate an item, exactly what the judge is shown
    for each dimension (``inputs`` per dimension, from the judge's prompts): history, query,
    answer, evidence (2b: the text of the turn's gold passages, without their ids; 2c: the
    run's top 5 passages after the scoring rules, with their ids, the participant's own) and
    the reference answer where a dimension uses it. It **holds reference data** (reference
    answers, 2b's gold passage texts): for the annotators only, never published;
  - the **guide** (``guide.md``, ``reteco.workbench.judge_audit.annotator_guide``): how to fill the sheet
    and the judge's own rubric text, rendered from the prompt files of the configured prompt
    version (never a copy that could drift from them);

- the **key** (``DIR/key.csv``, ``write_key``), for the organizers only: per item code its
  ``conversation_id``, ``system`` and ``submission`` (the file or folder name), turn, domain
  and depth. ``reteco agreement --key`` joins the ratings, keyed by item code, through it;
- the **sample record** (``DIR/sample.json``): seed, sizes, annotators, the allocation per
  stratum and the rule above, for the task report (it names the systems: organizers only);
- with ``--judge-out``, the **judge's ratings** of the same items (``judge_ratings``), keyed by
  item code like the sheets (``item_id,dimension,rater,score``): the judge run on the items
  (the same requests as generation scoring's, so every verdict already paid for comes from the
  cache), one row per ok verdict, rater ``<model>@<signature>``; invalid and failed judgments
  get no row and are counted.
"""

from __future__ import annotations

import csv
import json
import math
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reteco.formats.answers import Answers, read_answers
from reteco.formats.passages import PassageStore, PassageTexts
from reteco.formats.reference import PASSAGES, Reference
from reteco.formats.submission import open_submission
from reteco.formats.topic_ids import depth_group, parse_turn
from reteco.formats.trec_run import read_trec_run
from reteco.formats.turns import TurnRecord, read_turns
from reteco.problems import InputError, Problems, quoted
from reteco.scoring.generation import TOP_K_2C
from reteco.scoring.rules import RankedRun, apply_rules
from reteco.subtracks import DIMENSIONS, GOLD, RUN

SHEET_COLUMNS = ("item_id", "dimension", "rater", "score")  # what an annotator (and the judge's file) holds
KEY_COLUMNS = ("item_id", "conversation_id", "system", "submission", "turn", "domain", "depth",
               "inclusion_probability")
DESIGNS = ("stratified", "paired")
ANNOTATORS_FOLDER = "annotators"
SHEET, CONTEXT, GUIDE = "sheet.csv", "context.jsonl", "guide.md"
KEY, RECORD = "key.csv", "sample.json"
_ANNOTATOR_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
ALLOCATION_RULE = (
    "proportional to the stratum's size with at least one item per stratum where possible "
    "(max(1, floor(n N_h / N)), then Hamilton's largest remainder; seeded tie order); strata: "
    "domain x turn depth x system; uniform draw without replacement within a stratum; inclusion "
    "probability a_h / N_h. With fewer items than strata: systematic sampling with a random start "
    "over the items in stratum order, every item's inclusion probability n / N (no stratum excluded)"
)
PAIRED_RULE = (
    "turns drawn by systematic sampling with a random start over the turns some system answered, in "
    "domain x turn depth order (seeded random order within), every turn's inclusion probability "
    "k / M; every sampled turn rated for every system that answered it (a TREC pool judged for all runs)"
)
_SUBMISSION_SUFFIXES = (".jsonl.gz", ".jsonl", ".zip", ".gz")


@dataclass(frozen=True)
class System:
    """One participant system: its answers and, for 2c, its ranked run."""

    name: str
    answers: Answers
    ranked: RankedRun | None
    submission: str = ""  # the submission's file or folder name


@dataclass(frozen=True)
class SampledItem:
    """One (system, turn) item of the sample."""

    item_id: str
    system: str
    turn: int  # index into the reference's topics
    key: str
    conversation_id: str
    domain: str
    depth: str  # T1 ... T5+, or "" when the turn has no depth
    answer: str
    evidence: tuple[tuple[str, str], ...]  # (doc id, text): gold passages (2b), the run's top 5 (2c)
    gold_evidence: tuple[tuple[str, str], ...] = ()  # (doc id, text): the turn's gold passages
    submission: str = ""  # the system's submission file or folder name (the key's)
    inclusion_probability: float = 1.0  # the item's probability of being sampled, in the design


Stratum = tuple[str, str, str]  # (domain, depth group, system)


def system_name(path: Path) -> str:
    """A system's name from its submission path: the file or folder name without its suffix."""
    name = path.name
    for suffix in _SUBMISSION_SUFFIXES:
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def submission_paths(folder: Path | None, files: Sequence[Path]) -> list[Path]:
    """The submissions: every entry of ``folder`` (a file, zip or folder each; hidden names
    skipped), then ``files``; InputError when there are none."""
    paths: list[Path] = []
    if folder is not None:
        if not folder.is_dir():
            raise InputError("--submissions must be a folder holding one submission per system", str(folder))
        paths += sorted(p for p in folder.iterdir() if not p.name.startswith("."))
    paths += [Path(p) for p in files]
    if not paths:
        raise InputError("no submissions: give --submissions DIR or answers files", "human-sample")
    return paths


def read_systems(reference: Reference, paths: Sequence[Path],
                 names: Sequence[str] | None = None) -> tuple[list[System], Problems]:
    """Each submission read with the scoring code's rules (answers; 2c: also the run, ranked);
    InputError naming every file that cannot be used, or two submissions with one name. A
    system is named ``names[i]`` where given (a bulk download's owner), else from its path."""
    problems, failures = Problems(), Problems()
    systems: list[System] = []
    seen: dict[str, Path] = {}
    for i, path in enumerate(paths):
        name = names[i] if names is not None else system_name(path)
        if name in seen:
            failures.error(str(path), None, f"system name {quoted(name)} is also the name of {seen[name]}; rename one")
            continue
        seen[name] = path
        try:
            opened = open_submission(path)
            ranked = None
            if reference.row is not None and reference.row.evidence == RUN:
                member = opened.find("run")
                run = read_trec_run(opened.read_buffer(member), opened.display_name(member),
                                    reread=lambda m=member: opened.read_buffer(m))
                ranked = apply_rules(reference, run, problems)
            member = opened.find("answers")
            answers = read_answers(opened.read_bytes(member), opened.display_name(member), reference, problems)
        except InputError as exc:
            failures.extend(exc.problems)
            continue
        systems.append(System(name, answers, ranked, path.name))
    if failures.has_errors:
        raise InputError(failures)
    return systems, problems


def allocate(sizes: dict[Stratum, int], n: int, seed: int) -> dict[Stratum, int]:
    """How many items each stratum gives (module docstring); sums to min(n, total)."""
    total = sum(sizes.values())
    if n >= total:
        return dict(sizes)
    order = sorted(sizes)
    random.Random(f"{seed}:ties").shuffle(order)
    tie = {h: k for k, h in enumerate(order)}
    quota = {h: n * sizes[h] / total for h in sizes}
    if n >= len(sizes):
        alloc = {h: max(1, math.floor(quota[h])) for h in sizes}
    else:
        alloc = {h: 0 for h in sizes}
    while sum(alloc.values()) > n:
        h = max((h for h in alloc if alloc[h] > 1), key=lambda h: (alloc[h] - quota[h], -tie[h]))
        alloc[h] -= 1
    while sum(alloc.values()) < n:
        h = max((h for h in alloc if alloc[h] < sizes[h]), key=lambda h: (quota[h] - alloc[h], -tie[h]))
        alloc[h] += 1
    return alloc


def systematic(size: int, n: int, rng: random.Random) -> list[int]:
    """n of ``size`` positions by systematic sampling with a random start: floor(u + k size / n),
    u uniform in [0, size / n); every position's inclusion probability is exactly n / size, and
    any run of consecutive positions (a stratum, in stratum order) gets floor or ceil of its
    proportional share."""
    if not 1 <= n <= size:
        raise ValueError("systematic sampling takes 1 to size positions")
    step = size / n
    start = rng.random() * step
    return [min(size - 1, math.floor(start + k * step)) for k in range(n)]


def sample(reference: Reference, systems: Sequence[System], n: int, seed: int,
           design: str = "stratified", systems_per_turn: int | None = None) -> tuple[list[SampledItem], dict]:
    """The seeded sample (module docstring) and its record (design, sizes, allocation and inclusion
    probabilities). ``design`` "stratified": ``n`` items, strata domain x depth x system; "paired":
    ``n`` turns, each rated for every system that answered it."""
    if reference.row is None or not reference.row.judged:
        raise InputError(f"human ratings are for the judged sub-tracks 2b and 2c, not {reference.subtrack}",
                         str(reference.root))
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {', '.join(DESIGNS)}")
    turns = read_turns(reference)
    if design == "paired":
        return _paired(reference, turns, systems, n, seed, systems_per_turn)
    candidates: dict[Stratum, list[tuple[str, str, int]]] = {}
    for system in systems:
        for i, turn in enumerate(turns):
            if system.answers.get(i) is not None:
                stratum = (turn.domain, depth_group(turn.depth) if turn.depth is not None else "", system.name)
                candidates.setdefault(stratum, []).append((turn.key, system.name, i))
    if not candidates:
        raise InputError("no submission answers any reference turn: nothing to rate", "human-sample")
    sizes = {h: len(c) for h, c in candidates.items()}
    total = sum(sizes.values())
    rng = random.Random(seed)
    chosen: list[tuple[str, int]] = []
    if n >= len(sizes) or n >= total:
        alloc = allocate(sizes, n, seed)
        probability = {h: alloc[h] / sizes[h] for h in sizes}
        for h in sorted(candidates):
            pool = sorted(candidates[h])
            chosen += [(system, i) for _, system, i in rng.sample(pool, alloc[h])]
    else:  # fewer items than strata: no deterministic exclusion; every item has probability n / N
        ordered = [(h, c) for h in sorted(candidates) for c in sorted(candidates[h])]
        picks = [ordered[k] for k in systematic(total, n, rng)]
        alloc = Counter(h for h, _ in picks)
        alloc = {h: alloc.get(h, 0) for h in sizes}
        probability = {h: n / total for h in sizes}
        chosen = [(system, i) for _, (_, system, i) in picks]
    rng.shuffle(chosen)
    stratum_of = {(system, i): h for h, c in candidates.items() for _, system, i in c}
    inclusion = {item: probability[stratum_of[item]] for item in chosen}
    by_name = {s.name: s for s in systems}
    items = _items(reference, turns, by_name, chosen, inclusion)
    record = {
        "subtrack": reference.subtrack,
        "design": "stratified",
        "seed": seed,
        "requested": n,
        "sampled": len(items),
        "candidates": sum(sizes.values()),
        "systems": sorted(by_name),
        "allocation_rule": ALLOCATION_RULE,
        "strata": [
            {"domain": h[0], "depth": h[1], "system": h[2], "available": sizes[h], "sampled": alloc[h],
             "inclusion_probability": probability[h]}
            for h in sorted(sizes)
        ],
    }
    return items, record


def _items(reference: Reference, turns: list[TurnRecord], by_name: dict[str, System],
           chosen: list[tuple[str, int]], inclusion: dict[tuple[str, int], float]) -> list[SampledItem]:
    evidence = _evidence(reference, turns, by_name, chosen)
    width = max(4, len(str(len(chosen))))
    items = []
    for k, (system, i) in enumerate(chosen, 1):
        turn = turns[i]
        items.append(SampledItem(
            item_id=f"item-{k:0{width}d}", system=system, turn=i, key=turn.key,
            conversation_id=_conversation(reference, i), domain=turn.domain,
            depth=depth_group(turn.depth) if turn.depth is not None else "",
            answer=by_name[system].answers.get(i).text, evidence=evidence[(system, i)][0],
            gold_evidence=evidence[(system, i)][1], submission=by_name[system].submission,
            inclusion_probability=inclusion[(system, i)],
        ))
    return items


def _paired(reference: Reference, turns: list[TurnRecord], systems: Sequence[System], k: int, seed: int,
            systems_per_turn: int | None = None) -> tuple[list[SampledItem], dict]:
    """The paired design (``PAIRED_RULE``): k turns, each with every system's answer to it; with
    ``systems_per_turn`` m, when the budget cannot cover every system, a uniform random m of the
    S_t systems that answered turn t (each with probability m / S_t given the turn: balanced in
    expectation, the probability exact and recorded per item)."""
    answered = {i: [s.name for s in systems if s.answers.get(i) is not None] for i in range(len(turns))}
    eligible = [i for i in range(len(turns)) if answered[i]]
    if not eligible:
        raise InputError("no submission answers any reference turn: nothing to rate", "human-sample")
    rng = random.Random(seed)
    within = {i: rng.random() for i in eligible}  # a seeded random order within each domain x depth stratum

    def stratum(i: int) -> tuple[str, str]:
        return turns[i].domain, depth_group(turns[i].depth) if turns[i].depth is not None else ""

    ordered = sorted(eligible, key=lambda i: (stratum(i), within[i]))
    drawn = ordered if k >= len(ordered) else [ordered[p] for p in systematic(len(ordered), k, rng)]
    probability = min(1.0, k / len(ordered))
    chosen: list[tuple[str, int]] = []
    inclusion: dict[tuple[str, int], float] = {}
    for i in drawn:
        everyone = sorted(answered[i])
        some = everyone if systems_per_turn is None or systems_per_turn >= len(everyone) else \
            sorted(rng.sample(everyone, systems_per_turn))
        for system in some:
            chosen.append((system, i))
            inclusion[(system, i)] = probability if len(some) == len(everyone) else probability * len(some) / len(everyone)
    rng.shuffle(chosen)
    by_name = {s.name: s for s in systems}
    items = _items(reference, turns, by_name, chosen, inclusion)
    strata = Counter(stratum(i) for i in eligible)
    sampled = Counter(stratum(i) for i in drawn)
    record = {
        "subtrack": reference.subtrack,
        "design": "paired",
        "seed": seed,
        "requested_turns": k,
        "sampled_turns": len(drawn),
        "eligible_turns": len(ordered),
        "sampled": len(items),
        "candidates": sum(len(v) for v in answered.values()),
        "systems": sorted(by_name),
        # what each system has rated: every drawn turn it answered, or fewer with --systems-per-turn
        "items_per_system": {name: sum(1 for s, _ in chosen if s == name) for name in sorted(by_name)},
        "inclusion_probability": probability,
        "systems_per_turn": systems_per_turn,
        "allocation_rule": PAIRED_RULE + ("" if systems_per_turn is None else
                                          f"; then a uniform random {systems_per_turn} of the systems that answered "
                                          "each turn (probability m / S_t given the turn, times the turn's)"),
        "strata": [{"domain": h[0], "depth": h[1], "available": strata[h], "sampled": sampled.get(h, 0),
                    "inclusion_probability": probability} for h in sorted(strata)],
    }
    return items, record


def _conversation(reference: Reference, i: int) -> str:
    topic = reference.topics[i]
    if topic.conversation:
        return topic.conversation
    parsed = parse_turn(topic.topic_id)
    return f"{topic.domain}/{parsed[0]}" if parsed else topic.key


def _evidence(reference: Reference, turns: list[TurnRecord], systems: dict[str, System],
              chosen: list[tuple[str, int]]) -> dict[tuple[str, int], tuple[tuple, tuple]]:
    """The judge's evidence and gold evidence per chosen item, as generation scoring builds them:
    evidence 2b the turn's gold passages, 2c the run's top 5 after the rules; gold evidence the
    turn's gold passages; a passage without text is left out."""
    store = PassageStore(reference.root / PASSAGES)
    texts = PassageTexts(store)
    out = {}
    try:
        for system, i in chosen:
            turn = turns[i]
            gold = texts.of(turn.domain, list(turn.gold_doc_ids))
            run = gold if reference.row.evidence == GOLD else texts.of(turn.domain, systems[system].ranked.top_documents(i, TOP_K_2C))
            out[(system, i)] = (run, gold)
    finally:
        store.close()
    return out


def annotator_names(text: str) -> list[str]:
    """The annotators of ``--annotators``: a count N (``annotator-1`` ... ``annotator-N``) or
    comma-separated names (letters, digits, ``_.-``: each is a folder name); InputError otherwise."""
    text = text.strip()
    if text.isdigit():
        if not 1 <= int(text) <= 100:
            raise InputError(f"{text} annotators: give 1 to 100, or their names", "--annotators")
        return [f"annotator-{k}" for k in range(1, int(text) + 1)]
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if not _ANNOTATOR_NAME.fullmatch(n)]
    if bad or not names:
        raise InputError(f"annotator name(s) {', '.join(map(quoted, bad)) or quoted(text)} cannot be folder names; use "
                         "letters, digits, '_', '.' and '-' (starting with a letter or digit)", "--annotators")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InputError(f"annotator name(s) {', '.join(map(quoted, repeated))} given twice", "--annotators")
    return names


def annotator_order(items: Sequence[SampledItem], seed: int, annotator: str) -> list[SampledItem]:
    """The items in the order one annotator rates them: shuffled by ``random.Random`` seeded
    with the sample's seed and the annotator's name (reproducible; another order per annotator)."""
    ordered = sorted(items, key=lambda item: item.item_id)
    random.Random(f"{seed}:order:{annotator}").shuffle(ordered)
    return ordered


def write_sheet(path: Path, items: Sequence[SampledItem], dimensions: Sequence[str], annotator: str) -> int:
    """One annotator's rating sheet (module docstring), items in the given order; returns its
    number of rows."""
    rows = 0
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(SHEET_COLUMNS)
        for item in items:
            for dimension in dimensions:
                writer.writerow((item.item_id, dimension, annotator, ""))
                rows += 1
    return rows


def write_context(path: Path, items: Sequence[SampledItem], reference: Reference, dimensions: Sequence[str],
                  inputs: dict[str, Sequence[str]]) -> None:
    """An annotator's context file (module docstring), items in the given order: the item code
    and what the judge is shown, nothing that names a system, a conversation or a turn.
    ``inputs``: per dimension, what the judge's prompt shows
    (``JudgeConfig.prompts.dimensions[d].inputs``)."""
    turns = read_turns(reference)
    shown = {i for d in dimensions for i in inputs[d]}
    with open(path, "w", encoding="utf-8") as handle:
        for item in items:
            turn = turns[item.turn]
            record: dict[str, Any] = {"item_id": item.item_id, "dimensions": {d: list(inputs[d]) for d in dimensions}}
            if "history" in shown:
                record["history"] = turn.history
            if "query" in shown:
                record["query"] = turn.query
            record["answer"] = item.answer
            if "evidence" in shown:
                record["evidence"] = [
                    {"passage": n, **({"doc_id": doc_id} if reference.row.evidence == RUN else {}), "text": text}
                    for n, (doc_id, text) in enumerate(item.evidence, 1)
                ]
            if "gold_evidence" in shown:  # the turn's gold passages (correctness, completeness)
                record["gold_evidence"] = [
                    {"passage": n, "text": text} for n, (_doc_id, text) in enumerate(item.gold_evidence, 1)
                ]
            if "reference_answer" in shown:
                record["reference_answer"] = turn.answer
            if "key_points" in shown and turn.key_points:  # prompt version 3 on, when written
                record["key_points"] = [{"text": t, "importance": i} for t, i in turn.key_points]
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def write_key(path: Path, items: Sequence[SampledItem]) -> None:
    """The organizers' key (module docstring): one row per item code, in code order."""
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(KEY_COLUMNS)
        for item in sorted(items, key=lambda item: item.item_id):
            writer.writerow((item.item_id, item.conversation_id, item.system, item.submission, item.key,
                             item.domain, item.depth, repr(item.inclusion_probability)))


def judge_items(reference: Reference, items: Sequence[SampledItem], dimensions: Sequence[str]) -> list:
    """The JudgeItems of the sampled items, field for field as generation scoring builds them
    (``reteco.scoring.judge_run``), so their requests, and cache keys, are the same."""
    from reteco.scoring.judge_run import judge_items as items_of_turn

    turns = read_turns(reference)
    return [
        asked
        for item in items
        for asked in items_of_turn(turns[item.turn], item.answer, item.evidence, item.gold_evidence, dimensions)
    ]


def judge_ratings(reference: Reference, items: Sequence[SampledItem], dimensions: Sequence[str], config,
                  cache_dir: Path | None, max_calls: int | None, progress: bool = False) -> tuple[list[tuple], Counter, Any]:
    """(rating rows, counts by status, the run's stats): the judge's scores of the items keyed by
    item code, as the sheets (``item_id, dimension, rater, score``; the key joins the rest)."""
    from reteco.judge.runner import run_judge

    asked = judge_items(reference, items, dimensions)
    outcomes = run_judge(asked, config, cache_dir=cache_dir, progress=progress, max_calls=max_calls)
    rater = f"{config.model}@{config.signature}"
    rows, counts = [], Counter()
    pairs = [(item, d) for item in items for d in dimensions]
    for (item, dimension), outcome in zip(pairs, outcomes):
        counts[outcome.status] += 1
        if outcome.status == "ok":
            rows.append((item.item_id, dimension, rater, outcome.score))
    return rows, counts, outcomes.stats


def write_ratings(path: Path, rows: Sequence[tuple]) -> None:
    """A ratings CSV keyed by item code (``reteco.formats.ratings``, read with the key)."""
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(SHEET_COLUMNS)
        writer.writerows(rows)


def check_dimensions(names: Sequence[str]) -> list[str]:
    """The dimensions asked for, in DIMENSIONS order; InputError naming an unknown one."""
    unknown = [n for n in names if n not in DIMENSIONS]
    if unknown:
        raise InputError(f"unknown dimension(s) {', '.join(map(quoted, unknown))}; known: {', '.join(DIMENSIONS)}",
                         "--dimensions")
    return [d for d in DIMENSIONS if d in names]
