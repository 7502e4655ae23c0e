"""Track 2 of the synthetic release (``track2_recor/<domain>/``): RECOR-shaped conversations,
qrels and a corpus, one domain at a time, after one plan of conversation ids for the whole
release (``conversation_plan``).

The traps and the text's design are ``release``'s docstring; the words and sentences come from
``invented_text``.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from reteco.release.synthetic.invented_text import NEGATIVES_PER_GOLD, SPLITS, Coiner, compose, jsonl_text, qrels_text


@dataclass(frozen=True)
class Track2Domain:
    folder: str
    task: str  # the benchmark's "task" spelling, which upstream does not always lower-case
    bright: bool  # BRIGHT-derived: integer conversation ids, page-style document ids
    lexicon: tuple[str, ...]


TRACK2_DOMAINS = (
    Track2Domain(
        "biology",
        "biology",
        True,
        (
            "cell", "protein", "receptor", "gene", "enzyme", "membrane", "neuron", "tissue",
            "species", "mutation", "hormone", "muscle", "blood", "bacteria", "virus",
            "organism", "evolution", "metabolism", "chromosome", "pigment", "immune",
            "photosynthesis", "insect", "plant", "smell", "vision", "sleep", "digestion",
            "skin", "bone",
        ),
    ),
    Track2Domain(
        "earth_science",
        "earth_science",
        True,
        (
            "humidity", "rain", "cloud", "droplet", "magma", "volcano", "glacier", "ocean",
            "current", "sediment", "erosion", "mantle", "crust", "earthquake", "aquifer",
            "monsoon", "pressure", "vapor", "ozone", "climate", "soil", "mineral", "tide",
            "wind", "storm", "lightning", "fault", "basalt", "plate", "atmosphere",
        ),
    ),
    Track2Domain(
        "drones",
        "Drones",
        False,
        (
            "motor", "propeller", "battery", "bearing", "frame", "gimbal", "camera",
            "controller", "firmware", "esc", "receiver", "antenna", "gps", "altitude",
            "throttle", "lubrication", "thrust", "flight", "pilot", "fpv", "sensor",
            "telemetry", "payload", "quadcopter", "airspace", "calibration", "vibration",
            "charger", "range", "signal",
        ),
    ),
)


@dataclass
class _Conversation:
    conv_id: str
    turns: int


def conversation_plan(seed: int, scale: int = 1) -> dict[str, dict[str, list[_Conversation]]]:
    """Conversation ids and turn counts of every Track 2 domain and split; ``scale`` times the
    conversations of each (the integer ids drawn from ``scale`` times the range, so they never
    run out; the "ex_" ids are checked against those taken).

    Decided for the whole release at once because the traps span domains: the BRIGHT-derived
    domains share some integer ids within a split, and every split must reach turn depth 5+.
    """
    rng = random.Random(f"{seed}/track2/plan")
    bright = [d.folder for d in TRACK2_DOMAINS if d.bright]
    pool = [n for n in range(60 * scale) if n != 2]
    rng.shuffle(pool)
    ids: dict[str, dict[str, list[str]]] = {d.folder: {} for d in TRACK2_DOMAINS}
    taken_ex: set[str] = set()
    for split in SPLITS:
        # Conversation "2" of dev exists in two domains, as it does upstream.
        shared = [2, pool.pop()] if split == "dev" else [pool.pop()]
        for folder in bright:
            own = [pool.pop() for _ in range(rng.choice((3, 4)) * scale - len(shared))]
            ids[folder][split] = [str(n) for n in sorted(shared + own)]
        for spec in TRACK2_DOMAINS:
            if spec.bright:
                continue
            conv_ids = []
            for _ in range(rng.choice((3, 4)) * scale):
                while (conv_id := f"ex_{rng.randint(1000, 140000)}") in taken_ex:
                    pass
                taken_ex.add(conv_id)
                conv_ids.append(conv_id)
            ids[spec.folder][split] = conv_ids
    plan = {
        folder: {split: [_Conversation(c, rng.randint(2, 6)) for c in ids[folder][split]] for split in SPLITS}
        for folder in ids
    }
    if len(bright) >= 2:
        # Dev conversation "2": deep in one domain, short in the other, so some of its turn
        # ids exist in both domains and some in one only.
        first, second = bright[0], bright[1]
        _conversation(plan[first]["dev"], "2").turns = 5
        _conversation(plan[second]["dev"], "2").turns = 3
    for split in SPLITS:
        convs = [c for folder in plan for c in plan[folder][split]]
        if max(c.turns for c in convs) < 5:
            convs[-1].turns = 6
    return plan


def _conversation(convs: list[_Conversation], conv_id: str) -> _Conversation:
    return next(c for c in convs if c.conv_id == conv_id)


@dataclass
class _Passage:
    doc_id: str
    content: str = ""
    facets: list[str] = field(default_factory=list)


def _bright_pages(rng: random.Random, spec: Track2Domain, coiner: Coiner, slug_words: list[str]) -> list[list[str]]:
    """Document ids of 1-2 BRIGHT pages under one slug, chunked like "Kelvin_equation5.txt"."""
    slug = rng.choice(("{0}_and_{1}", "why_{0}_{1}", "{0}_{1}_{2}")).format(*slug_words)
    pages = []
    for _ in range(rng.randint(1, 2)):
        title = f"{coiner.word().capitalize()}_{rng.choice(spec.lexicon)}"
        separator = rng.choice(("", "_"))
        pages.append([f"{slug}/{title}{separator}{k}.txt" for k in range(rng.randint(3, 6))])
    return pages


def track2_domain_files(spec: Track2Domain, seed: int, plan: dict[str, list[_Conversation]]) -> dict[str, str]:
    rng = random.Random(f"{seed}/track2/{spec.folder}")
    coiner = Coiner(rng, spec.lexicon)
    corpus: list[_Passage] = []
    files: dict[str, str] = {}
    gold_count = 0
    hard_topics: list[tuple[str, list[str], list[str]]] = []
    for split in SPLITS:
        conversations, qrels = [], []
        for conv in plan[split]:
            entity = coiner.word().capitalize()
            topic_words = rng.sample(spec.lexicon, 3)
            if spec.bright:
                pages = _bright_pages(rng, spec, coiner, topic_words)
                chunks = [doc_id for page in pages for doc_id in page]
                pool_size = min(len(chunks), rng.randint(3, 6))
                pool_ids = rng.sample(chunks, pool_size)
                # The page's other chunks stay in the corpus: same topic, not gold.
                spare = [c for c in chunks if c not in pool_ids]
            else:
                pool_ids = [f"{spec.folder}_{conv.conv_id}_doc_{k}" for k in range(rng.randint(3, 6))]
                spare = []
            pool = [_Passage(doc_id, facets=[coiner.word(), rng.choice(spec.lexicon)]) for doc_id in pool_ids]
            for passage in pool:
                content = rng.sample(topic_words, rng.randint(1, 2)) + passage.facets + rng.sample(spec.lexicon, 2)
                if rng.random() < 0.8:
                    content.insert(0, entity)
                rng.shuffle(content)
                passage.content = compose(rng, spec.lexicon, content, [], rng.randint(3, 4))
            facets = [f for p in pool for f in p.facets]
            hard_topics.append((entity, topic_words, facets))
            for doc_id in spare:
                # A neighbouring chunk of the same page: same topic, often a gold chunk's facet.
                content = [entity, rng.choice(topic_words), coiner.word()] + rng.sample(spec.lexicon, 3)
                if rng.random() < 0.6:
                    content.append(rng.choice(facets))
                rng.shuffle(content)
                corpus.append(_Passage(doc_id, compose(rng, spec.lexicon, content, [], rng.randint(2, 3))))
            corpus += pool
            gold_count += len(pool)
            record = _track2_conversation(rng, spec, conv, entity, topic_words, pool)
            conversations.append(record)
            for turn in record["turns"]:
                qrels += [(f"{conv.conv_id}_turn_{turn['turn_id']}", d) for d in turn["gold_doc_ids"]]
        files[f"benchmark_{split}.json"] = json.dumps(conversations, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
        files[f"qrels_{split}.txt"] = qrels_text(qrels)
    benchmark_ids = {c.conv_id for split in SPLITS for c in plan[split]}
    wanted = NEGATIVES_PER_GOLD * gold_count - (len(corpus) - gold_count)
    corpus += _track2_negatives(rng, spec, coiner, hard_topics, wanted, benchmark_ids)
    rng.shuffle(corpus)
    files["documents.jsonl"] = jsonl_text([{"doc_id": p.doc_id, "content": p.content} for p in corpus])
    return files


def _track2_conversation(
    rng: random.Random,
    spec: Track2Domain,
    conv: _Conversation,
    entity: str,
    topic_words: list[str],
    pool: list[_Passage],
) -> dict:
    t0, t1, t2 = topic_words
    turns: list[dict] = []
    history: list[str] = []
    for turn_id in range(1, conv.turns + 1):
        gold = rng.sample(pool, rng.randint(1, min(4, len(pool))))
        if turn_id == 1:
            # A turn names some facets of its gold passages, never all: retrieval stays imperfect.
            facets = [f for p in gold for f in p.facets if rng.random() < 0.6][:3] or [gold[0].facets[0]]
        else:
            # A follow-up names one facet, often only by a common word: without the history
            # a retriever cannot tell which conversation it belongs to.
            facets = [rng.choice(gold).facets[0 if rng.random() < 0.4 else 1]]
        wanted = facets[0] if len(facets) == 1 else ", ".join(facets[:-1]) + " and " + facets[-1]
        if turn_id == 1:
            query = f"In {t0} and {t1}, how does {entity} affect the {wanted}?"
        else:
            # Follow-up turns lean on the dialogue: they rarely repeat the topic's words,
            # which is why history helps a retriever.
            query = rng.choice(
                (
                    f"Is that why the {wanted} matters so much?",
                    f"Does that also change the {wanted}?",
                    f"What about the {wanted} then?",
                    f"So how does the {wanted} fit in with that?",
                )
            )
        answer = compose(rng, spec.lexicon, [entity] + facets, [], 2)
        turns.append(
            {
                "turn_id": turn_id,
                "query": query,
                "answer": answer,
                "gold_doc_ids": [p.doc_id for p in gold],
                "conversation_history": "\n".join(history) if history else "No previous conversation.",
                "subquestion_reasoning": f"Select documents discussing the {wanted} of {entity}.",
                "subquestion_reasoning_metadata": {
                    "relevance_signals": facets,
                    "irrelevance_signals": [f"general {t2}"],
                    "target_information": f"Documents should explain how {entity} relates to the {wanted}.",
                },
            }
        )
        history += [f"Q: {query}", f"A: {answer}"]
    created = f"2025-12-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999999):06d}"
    return {
        "id": conv.conv_id,
        "task": spec.task,
        "original_query": f"How does {entity} shape {t0}, {t1} and {t2}?",
        "original_answer": compose(rng, spec.lexicon, [entity, t0, t1, t2], [], 2),
        "turns": turns,
        "metadata": {
            "created_at": created,
            "gold_doc_count": sum(len(t["gold_doc_ids"]) for t in turns),
            "method": "unified_bright_workflow",
            "num_turns": conv.turns,
            "source": "bright" if spec.bright else "annotated_data",
            "version": "unified_v1",
        },
    }


def _track2_negatives(
    rng: random.Random,
    spec: Track2Domain,
    coiner: Coiner,
    hard_topics: list[tuple[str, list[str], list[str]]],
    count: int,
    benchmark_ids: set[str],
) -> list[_Passage]:
    """Negatives grouped like the corpus around them: BRIGHT pages, or RECOR example docs."""
    passages: list[_Passage] = []
    taken = set(benchmark_ids)
    while len(passages) < count:
        if rng.random() < 0.4:
            entity, topic_words, facets = rng.choice(hard_topics)
            words = [entity, rng.choice(topic_words), rng.choice(facets)]
        else:
            entity, topic_words = coiner.word().capitalize(), rng.sample(spec.lexicon, 3)
            words = [entity]
        if spec.bright:
            ids = [doc_id for page in _bright_pages(rng, spec, coiner, topic_words) for doc_id in page]
        else:
            while (example := f"ex_{rng.randint(1000, 140000)}") in taken:
                pass
            taken.add(example)
            ids = [f"{spec.folder}_{example}_doc_{k}" for k in range(rng.randint(2, 5))]
        for doc_id in ids[: count - len(passages)]:
            content = words + rng.sample(spec.lexicon, 4) + [coiner.word()]
            rng.shuffle(content)
            passages.append(_Passage(doc_id, compose(rng, spec.lexicon, content, [], rng.randint(2, 3))))
    return passages
