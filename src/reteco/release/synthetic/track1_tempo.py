"""Track 1 of the synthetic release (``track1_tempo/<domain>/``): TEMPO-shaped queries, steps,
guidance, qrels and a corpus with its v1.1 duplicate map, one domain at a time.

Why one module: a domain's queries, gold documents, texts, negatives, ids and
guidance are drawn from one random stream in one fixed order, and that order is the release's
bytes; the steps that draw from it read best, and change safely, side by side.

The traps and the text's design are ``release``'s docstring; the words and sentences come from
``invented_text``.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from reteco.release.synthetic.invented_text import (
    MONTHS,
    NEGATIVES_PER_GOLD,
    QUERIES_PER_SPLIT,
    SPLITS,
    VERBS,
    Coiner,
    compose,
    jsonl_text,
    qrels_text,
)


@dataclass(frozen=True)
class Track1Domain:
    name: str
    years: tuple[int, int]
    lexicon: tuple[str, ...]


TRACK1_DOMAINS = (
    Track1Domain(
        "bitcoin",
        (2009, 2024),
        (
            "block", "miner", "mempool", "fee", "halving", "wallet", "node", "hashrate",
            "difficulty", "transaction", "segwit", "taproot", "exchange", "lightning",
            "channel", "softfork", "satoshi", "ledger", "script", "utxo", "coinbase",
            "reward", "pool", "relay", "signature", "address", "peer", "client", "upgrade",
            "inscription",
        ),
    ),
    Track1Domain(
        "history",
        (1640, 1989),
        (
            "treaty", "empire", "dynasty", "revolution", "army", "parliament", "monarch",
            "colony", "charter", "siege", "republic", "province", "census", "border",
            "reform", "crown", "senate", "campaign", "archive", "chronicle", "garrison",
            "tariff", "railway", "harbour", "guild", "uprising", "embassy", "decree",
            "fortress", "glassworks",
        ),
    ),
    Track1Domain(
        "law",
        (1950, 2023),
        (
            "statute", "court", "appeal", "copyright", "contract", "tenant", "liability",
            "precedent", "ruling", "verdict", "plaintiff", "defendant", "amendment",
            "jurisdiction", "patent", "clause", "tribunal", "licence", "damages",
            "regulation", "registration", "trademark", "injunction", "lease", "custody",
            "arbitration", "warrant", "testimony", "settlement", "compliance",
        ),
    ),
)

_TEMPORAL_CLASSES = (
    "event_analysis_and_localization",
    "time_period_contextualization",
    "trends_changes_and_cross_period",
    "origins_evolution_comparative_analysis",
    "causation_analysis",
    "sources_methods_and_documentation",
)
_TEMPORAL_INTENTS = ("when", "duration", "order", "before_after", "timeline")
# Ordered from coarse to fine, so the finest granularity of a query is the max index.
_GRANULARITIES = ("decade", "year", "month", "date")


@dataclass(frozen=True)
class _Period:
    """A time span as a text mentions it and as the guidance annotates it."""

    phrase: str  # "in April 2017"
    label: str  # "April 2017": a key time anchor
    start_iso: str
    end_iso: str
    granularity: str


def _period(rng: random.Random, year: int, last_year: int) -> _Period:
    kind = rng.choices(("year", "month", "date", "range", "decade"), weights=(5, 3, 1, 2, 1))[0]
    if kind == "month":
        month = rng.randint(1, 12)
        name = MONTHS[month - 1]
        return _Period(f"in {name} {year}", f"{name} {year}", f"{year}-{month:02d}", f"{year}-{month:02d}", "month")
    if kind == "date":
        month, day = rng.randint(1, 12), rng.randint(1, 28)
        label = f"{day} {MONTHS[month - 1]} {year}"
        iso = f"{year}-{month:02d}-{day:02d}"
        return _Period(f"on {label}", label, iso, iso, "date")
    if kind == "range" and year < last_year:
        end = min(last_year, year + rng.randint(1, 3))
        return _Period(f"between {year} and {end}", f"{year}-{end}", str(year), str(end), "year")
    if kind == "decade":
        decade = year - year % 10
        return _Period(f"during the {decade}s", f"{decade}s", str(decade), str(decade + 9), "decade")
    return _Period(f"in {year}", str(year), str(year), str(year), "year")


@dataclass
class _Doc:
    """A corpus document before its id is known (Track 1 ids are assigned after shuffling)."""

    content: str
    periods: list[_Period] = field(default_factory=list)
    phrases: list[str] = field(default_factory=list)  # how the text words each period
    doc_id: str = ""


@dataclass
class _Step:
    word: str
    period: _Period
    docs: list[_Doc] = field(default_factory=list)


@dataclass
class _Query:
    qid: str
    entity: str
    topic_words: list[str]
    temporal: bool
    first_year: int
    last_year: int
    steps: list[_Step]
    text: str = ""
    answer: str = ""
    klass: str = ""
    intent: str = ""


def _query_id(rng: random.Random, taken: set[str]) -> str:
    # TEMPO ids are "<StackExchange post id>_<row>"; only the shape matters here.
    while True:
        qid = f"{rng.randint(1000, 129999)}_{rng.randint(1, 999)}"
        if qid not in taken:
            taken.add(qid)
            return qid


def _track1_queries(rng: random.Random, spec: Track1Domain, coiner: Coiner, taken: set[str],
                    scale: int = 1) -> dict[str, list[_Query]]:
    first, last = spec.years
    by_split: dict[str, list[_Query]] = {}
    for split in SPLITS:
        queries = []
        for _ in range(QUERIES_PER_SPLIT * scale):
            qid = _query_id(rng, taken)
            entity = coiner.word().capitalize()
            topic_words = rng.sample(spec.lexicon, 3)
            # TEMPO's guidance marks a few queries as not temporal; they name no period.
            temporal = rng.random() > 0.12
            y0 = rng.randint(first, last - 2)
            y1 = min(last, y0 + rng.randint(1, 8))
            years = sorted(rng.randint(y0, y1) for _ in range(rng.randint(2, 4)))
            steps = [_Step(coiner.word(), _period(rng, year, y1)) for year in years]
            queries.append(_Query(qid, entity, topic_words, temporal, y0, y1, steps))
        by_split[split] = queries
    return by_split


def _track1_gold(rng: random.Random, spec: Track1Domain, query: _Query) -> None:
    """Gold documents of every step; now and then one document serves two steps."""
    for index, step in enumerate(query.steps):
        count = rng.randint(1, 3)
        if index and rng.random() < 0.25:
            shared = rng.choice(query.steps[index - 1].docs)
            shared.periods.append(step.period)
            step.docs.append(shared)
            count -= 1
        for _ in range(count):
            step.docs.append(_Doc("", [step.period]))
    for doc in _unique_docs(query):
        doc_steps = [s for s in query.steps if any(d is doc for d in s.docs)]
        content = rng.sample(query.topic_words, rng.randint(1, 2))
        # Gold texts often omit the query's distinctive words, as real evidence passages do.
        if rng.random() < 0.6:
            content.insert(0, query.entity)
        content += [s.word for s in doc_steps if rng.random() < 0.6]
        content += rng.sample(spec.lexicon, 2)
        rng.shuffle(content)
        doc.phrases = [_date_wording(rng, p, query.first_year) for p in doc.periods]
        doc.content = compose(rng, spec.lexicon, content, doc.phrases, rng.randint(3, 4))


def _date_wording(rng: random.Random, period: _Period, first_year: int) -> str:
    """How a gold text dates a period: often relative to an earlier year, as narratives do.

    A relative date ("3 years after 2011") shares no year token with the query, so matching
    years lexically is not enough; the guidance still records the resolved period.
    """
    if period.granularity not in ("year", "month", "date") or rng.random() < 0.55:
        return period.phrase
    year = int(period.start_iso[:4])
    reference = first_year - rng.randint(1, 6)
    offset = f"{year - reference} years after {reference}"
    if period.granularity == "year":
        return offset
    month = MONTHS[int(period.start_iso[5:7]) - 1]
    if period.granularity == "month":
        return f"in {month}, {offset}"
    return f"on {int(period.start_iso[8:10])} {month}, {offset}"


def _unique_docs(query: _Query) -> list[_Doc]:
    seen: list[_Doc] = []
    for step in query.steps:
        for doc in step.docs:
            if not any(doc is s for s in seen):
                seen.append(doc)
    return seen


def _track1_texts(rng: random.Random, spec: Track1Domain, query: _Query) -> None:
    t0, t1, t2 = query.topic_words
    span = f"in {query.first_year}" if query.first_year == query.last_year else f"between {query.first_year} and {query.last_year}"
    if query.temporal:
        stem = rng.choice(
            (
                f"Why did the {t0} of {query.entity} change {span}?",
                f"How did the {t0} and {t1} of {query.entity} evolve {span}?",
                f"What happened to the {t0} of {query.entity} {span}?",
                f"When did {query.entity} adopt the {t0} {t1}, {span}?",
            )
        )
        hints = [s for s in query.steps if rng.random() < 0.5] or query.steps[:1]
        detail = " ".join(f"There was talk of the {s.word} {s.period.phrase}." for s in hints)
    else:
        stem = rng.choice(
            (
                f"Why is the {t0} of {query.entity} tied to its {t1}?",
                f"What explains the {t0} {t1} of {query.entity}?",
            )
        )
        hints = [s for s in query.steps if rng.random() < 0.5] or query.steps[:1]
        detail = " ".join(f"Some accounts mention the {s.word}." for s in hints)
    body = f"<p>I noticed that the {t1} and the {t2} around {query.entity} {rng.choice(VERBS)} the {rng.choice(spec.lexicon)}. {detail}</p>\n<p>What reasons might there be?</p>\n"
    query.text = f"{stem}\n{body}"
    query.answer = "<p>" + compose(rng, spec.lexicon, [query.entity, t0, t1], [s.period.phrase for s in query.steps[:2]], 2) + "</p>\n"
    query.klass = rng.choice(_TEMPORAL_CLASSES)
    query.intent = rng.choice(_TEMPORAL_INTENTS) if query.temporal else "none"


def _track1_negatives(rng: random.Random, spec: Track1Domain, coiner: Coiner, queries: list[_Query], count: int) -> list[_Doc]:
    """Negatives: background texts, plus two kinds of hard negative that fool a lexical ranker."""
    first, last = spec.years
    background = [coiner.word().capitalize() for _ in range(12)]
    docs = []
    for _ in range(count):
        kind = rng.random()
        query = rng.choice(queries)
        step = rng.choice(query.steps)
        if kind < 0.35:
            # The right topic at the wrong time: a query's words, dated outside its span.
            content = [query.entity, rng.choice(query.topic_words), step.word] + rng.sample(spec.lexicon, 2)
            year = rng.choice((rng.randint(first - 40, query.first_year - 1), rng.randint(query.last_year + 1, last + 10)))
            period = _period(rng, year, year)
            if period.granularity == "decade":
                # A decade could reach back into the query's span; this one must stay outside.
                period = _Period(f"in {year}", str(year), str(year), str(year), "year")
        elif kind < 0.6:
            # The right time, the wrong topic: a step's period and one of the query's common words.
            content = [rng.choice(background), rng.choice(query.topic_words)] + rng.sample(spec.lexicon, 3)
            period = step.period
        else:
            content = [rng.choice(background)] + rng.sample(spec.lexicon, 4)
            period = _period(rng, rng.randint(first, last), last)
        rng.shuffle(content)
        docs.append(_Doc(compose(rng, spec.lexicon, content, [period.phrase], rng.randint(2, 3)), [period], [period.phrase]))
    return docs


def _assign_track1_ids(rng: random.Random, domain: str, docs: list[_Doc], duplicated: list[_Doc]) -> dict[str, str]:
    """Number the shuffled corpus as TEMPO does; returns the v1.1 duplicate map.

    A document listed in ``duplicated`` had a near-identical neighbour in v1.0, removed in
    v1.1: that neighbour takes the next number, so the corpus has gaps where it was.
    """
    taken: set[str] = set()

    def new_id(number: int) -> str:
        while True:
            doc_id = f"{domain}/{rng.getrandbits(32):08x}_{number:04d}.txt"
            if doc_id not in taken:
                taken.add(doc_id)
                return doc_id

    number = rng.randint(100, 2000)
    removed: dict[str, str] = {}
    for doc in docs:
        doc.doc_id = new_id(number)
        number += 1
        if any(doc is d for d in duplicated):
            removed[new_id(number)] = doc.doc_id
            number += 1
    return dict(sorted(removed.items()))


def track1_domain_files(spec: Track1Domain, seed: int, taken_qids: set[str], scale: int = 1) -> dict[str, str]:
    """A Track 1 domain's files; ``scale`` times the queries per split (``release.write_synthetic_release``)."""
    rng = random.Random(f"{seed}/track1/{spec.name}")
    coiner = Coiner(rng, spec.lexicon)
    by_split = _track1_queries(rng, spec, coiner, taken_qids, scale)
    all_queries = [q for split in SPLITS for q in by_split[split]]
    for query in all_queries:
        _track1_gold(rng, spec, query)
        _track1_texts(rng, spec, query)
    gold = [doc for q in all_queries for doc in _unique_docs(q)]
    negatives = _track1_negatives(rng, spec, coiner, all_queries, NEGATIVES_PER_GOLD * len(gold))
    corpus = gold + negatives
    rng.shuffle(corpus)
    # Duplicates of gold documents are the ones that matter: a v1.0 run that retrieves the
    # removed copy scores nothing unless it is mapped to the kept id.
    duplicated = rng.sample(gold, 3) + rng.sample(negatives, 2)
    duplicate_map = _assign_track1_ids(rng, spec.name, corpus, duplicated)

    files = {
        "documents.jsonl": jsonl_text([{"id": d.doc_id, "content": d.content} for d in corpus]),
        "duplicate_map.json": json.dumps(duplicate_map, indent=2, sort_keys=True) + "\n",
    }
    for split in SPLITS:
        queries = by_split[split]
        examples, steps, guidance, qrels, step_qrels = [], [], [], [], []
        for q in queries:
            gold_ids = [d.doc_id for d in _unique_docs(q)]
            examples.append({"id": q.qid, "query": q.text, "gold_ids": gold_ids, "gold_answers": [q.answer]})
            step_records = []
            for n, step in enumerate(q.steps, start=1):
                step_id = f"{q.qid}_step{n}"
                step_gold = [d.doc_id for d in step.docs]
                step_records.append(
                    {
                        "step_id": step_id,
                        "step": _step_text(rng, q, n, step),
                        "step_instruction": f"Retrieve passages that date the {step.word} {step.period.phrase} and describe its effect on the {q.topic_words[0]}.",
                        "gold_ids": step_gold,
                    }
                )
                step_qrels += [(step_id, d) for d in step_gold]
            steps.append({"id": q.qid, "query": q.text, "steps": step_records})
            guidance.append(_track1_guidance(rng, q))
            qrels += [(q.qid, d) for d in gold_ids]
        files[f"examples_{split}.jsonl"] = jsonl_text(examples)
        files[f"steps_{split}.jsonl"] = jsonl_text(steps)
        files[f"guidance_{split}.jsonl"] = jsonl_text(guidance)
        files[f"qrels_{split}.txt"] = qrels_text(qrels)
        files[f"qrels_steps_{split}.txt"] = qrels_text(step_qrels)
    return files


def _step_text(rng: random.Random, q: _Query, n: int, step: _Step) -> str:
    # Half the steps name only the query's topic and the period, as "when did X change" steps do.
    if rng.random() < 0.5:
        return f"Identify when the {step.word} affected the {q.topic_words[n % 3]} of {q.entity} {step.period.phrase}."
    return f"Identify what changed in the {q.topic_words[n % 3]} of {q.entity} {step.period.phrase}."


def _track1_guidance(rng: random.Random, q: _Query) -> dict:
    anchors: list[str] = []
    for step in q.steps:
        if step.period.label not in anchors:
            anchors.append(step.period.label)
    finest = max((s.period.granularity for s in q.steps), key=_GRANULARITIES.index)
    query_guidance = {
        "is_temporal_query": q.temporal,
        "temporal_intent": q.intent,
        "query_temporal_signals": [f"between {q.first_year} and {q.last_year}"] if q.temporal else [],
        "query_temporal_events": [],
        "query_summary": f"Asks about the {q.topic_words[0]} of {q.entity}.",
        "temporal_reasoning_class_primary": q.klass,
        "temporal_reasoning_class_secondary": [],
        "retrieval_reasoning": f"Find dated evidence on {q.entity} for each period the question spans.",
        "retrieval_plan": [
            {"step": n, "action": f"Find passages on the {s.word} {s.period.phrase}."} for n, s in enumerate(q.steps, start=1)
        ],
        "key_time_anchors": anchors if q.temporal else [],
        "expected_granularity": finest if q.temporal else "unknown",
        "quality_checks": ["cross-check dates from multiple sources", "prefer primary/authoritative sources"],
    }
    annotations = []
    for doc in _unique_docs(q):
        if len({p.granularity for p in doc.periods}) == 1:
            start = min(p.start_iso for p in doc.periods)
            end = max(p.end_iso for p in doc.periods)
            granularity = doc.periods[0].granularity
        else:
            # Periods of mixed precision (a passage serving two steps) are spanned in years.
            start = min(p.start_iso[:4] for p in doc.periods)
            end = max(p.end_iso[:4] for p in doc.periods)
            granularity = "year"
        annotations.append(
            {
                "doc_id": doc.doc_id,
                "passage_temporal_signals": list(doc.phrases),
                "passage_temporal_events": [],
                "time_mentions": [p.label for p in doc.periods],
                "time_scope_guess": {"start_iso": start, "end_iso": end, "granularity": granularity},
                "tense_guess": "past",
                "confidence": round(rng.uniform(0.6, 0.95), 2),
            }
        )
    return {"id": q.qid, "query_guidance": query_guidance, "gold_passage_annotations": annotations}
