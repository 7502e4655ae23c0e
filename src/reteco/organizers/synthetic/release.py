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
import random
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_SEED = 20270110
SPLITS = ("train", "dev", "test")
TRACK1_DIR = "track1_tempo"
TRACK2_DIR = "track2_recor"

QUERIES_PER_SPLIT = 6
NEGATIVES_PER_GOLD = 6


@dataclass(frozen=True)
class _Track1Domain:
    name: str
    years: tuple[int, int]
    lexicon: tuple[str, ...]


@dataclass(frozen=True)
class _Track2Domain:
    folder: str
    task: str  # the benchmark's "task" spelling, which upstream does not always lower-case
    bright: bool  # BRIGHT-derived: integer conversation ids, page-style document ids
    lexicon: tuple[str, ...]


TRACK1_DOMAINS = (
    _Track1Domain(
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
    _Track1Domain(
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
    _Track1Domain(
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

TRACK2_DOMAINS = (
    _Track2Domain(
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
    _Track2Domain(
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
    _Track2Domain(
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

# Ordinary words that carry no topic: they give texts their bulk and shared common terms.
_ADJECTIVES = (
    "early", "later", "first", "new", "old", "large", "small", "local", "general", "public",
    "official", "common", "main", "several", "major", "minor", "formal", "gradual", "sudden",
)
_NOUNS = (
    "report", "record", "period", "effect", "result", "reason", "source", "account",
    "practice", "system", "process", "level", "number", "part", "case", "form", "rule",
    "view", "decision", "debate", "response",
)
_VERBS = (
    "changed", "reduced", "expanded", "replaced", "affected", "delayed", "shaped",
    "weakened", "strengthened", "described", "limited", "introduced", "ended", "raised",
)
_MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
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

# Sentence frames: {W} takes a content word, {A} an adjective, {N} a generic noun, {V} a verb,
# {D} a date phrase.
_DATED_FRAMES = (
    "{D}, the {W} of {W} {V} the {A} {W} {N}.",
    "Records show that {D} the {W} {W} {V} the {A} {W}.",
    "The {W} {N} was {V} {D} after the {A} {W}.",
    "{A} {N}s on the {W} {V} the {W} {W} {D}.",
)
_UNDATED_FRAMES = (
    "The {W} and the {W} {V} the {A} {W} {N}.",
    "The {A} {W} {N} {V} the {W} of {W}.",
    "In {A} {N}s, the {W} {V} the {W} of {W}.",
    "Its {W} {V} the {A} {N} of {W} and {W}.",
)

_ONSETS = (
    "b", "c", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr",
    "gr", "kl", "pr", "st", "tr", "sh", "th",
)
_NUCLEI = ("a", "e", "i", "o", "u", "ai", "ea", "io", "ou")
_CODAS = ("", "n", "r", "l", "s", "m", "x", "th", "nd", "rk")


class _Coiner:
    """Invents pronounceable words that no lexicon holds, each at most once per domain.

    Topic-specific words must be shared only by the texts meant to share them, which real
    words from a lexicon cannot guarantee.
    """

    def __init__(self, rng: random.Random, reserved: tuple[str, ...]):
        self._rng = rng
        self._used = set(reserved) | set(_ADJECTIVES) | set(_NOUNS) | set(_VERBS)

    def word(self) -> str:
        while True:
            syllables = self._rng.choice((2, 2, 3))
            parts = [self._rng.choice(_ONSETS) + self._rng.choice(_NUCLEI) for _ in range(syllables)]
            candidate = "".join(parts) + self._rng.choice(_CODAS)
            if len(candidate) >= 5 and candidate not in self._used:
                self._used.add(candidate)
                return candidate


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
        name = _MONTHS[month - 1]
        return _Period(f"in {name} {year}", f"{name} {year}", f"{year}-{month:02d}", f"{year}-{month:02d}", "month")
    if kind == "date":
        month, day = rng.randint(1, 12), rng.randint(1, 28)
        label = f"{day} {_MONTHS[month - 1]} {year}"
        iso = f"{year}-{month:02d}-{day:02d}"
        return _Period(f"on {label}", label, iso, iso, "date")
    if kind == "range" and year < last_year:
        end = min(last_year, year + rng.randint(1, 3))
        return _Period(f"between {year} and {end}", f"{year}-{end}", str(year), str(end), "year")
    if kind == "decade":
        decade = year - year % 10
        return _Period(f"during the {decade}s", f"{decade}s", str(decade), str(decade + 9), "decade")
    return _Period(f"in {year}", str(year), str(year), str(year), "year")


def _compose(
    rng: random.Random,
    lexicon: tuple[str, ...],
    content: list[str],
    dates: list[str],
    sentences: int,
) -> str:
    """Sentences that use every content word and date phrase once, padded from the lexicon."""
    words, phrases = list(content), list(dates)
    out = []
    while words or phrases or len(out) < sentences:
        frame = rng.choice(_DATED_FRAMES if phrases else _UNDATED_FRAMES)
        text = frame
        while "{W}" in text:
            text = text.replace("{W}", words.pop(0) if words else rng.choice(lexicon), 1)
        for slot, choices in (("{A}", _ADJECTIVES), ("{N}", _NOUNS), ("{V}", _VERBS)):
            while slot in text:
                text = text.replace(slot, rng.choice(choices), 1)
        if "{D}" in text:
            text = text.replace("{D}", phrases.pop(0))
        out.append(text[0].upper() + text[1:])
    return " ".join(out)


def _jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in records)


def _qrels(pairs: list[tuple[str, str]]) -> str:
    return "".join(f"{topic}\t0\t{doc}\t1\n" for topic, doc in pairs)


# --------------------------------------------------------------------------- Track 1


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


def _track1_queries(rng: random.Random, spec: _Track1Domain, coiner: _Coiner, taken: set[str]) -> dict[str, list[_Query]]:
    first, last = spec.years
    by_split: dict[str, list[_Query]] = {}
    for split in SPLITS:
        queries = []
        for _ in range(QUERIES_PER_SPLIT):
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


def _track1_gold(rng: random.Random, spec: _Track1Domain, query: _Query) -> None:
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
        doc.content = _compose(rng, spec.lexicon, content, doc.phrases, rng.randint(3, 4))


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
    month = _MONTHS[int(period.start_iso[5:7]) - 1]
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


def _track1_texts(rng: random.Random, spec: _Track1Domain, query: _Query) -> None:
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
    body = f"<p>I noticed that the {t1} and the {t2} around {query.entity} {rng.choice(_VERBS)} the {rng.choice(spec.lexicon)}. {detail}</p>\n<p>What reasons might there be?</p>\n"
    query.text = f"{stem}\n{body}"
    query.answer = "<p>" + _compose(rng, spec.lexicon, [query.entity, t0, t1], [s.period.phrase for s in query.steps[:2]], 2) + "</p>\n"
    query.klass = rng.choice(_TEMPORAL_CLASSES)
    query.intent = rng.choice(_TEMPORAL_INTENTS) if query.temporal else "none"


def _track1_negatives(rng: random.Random, spec: _Track1Domain, coiner: _Coiner, queries: list[_Query], count: int) -> list[_Doc]:
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
        docs.append(_Doc(_compose(rng, spec.lexicon, content, [period.phrase], rng.randint(2, 3)), [period], [period.phrase]))
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


def _track1_domain(spec: _Track1Domain, seed: int, taken_qids: set[str]) -> dict[str, str]:
    rng = random.Random(f"{seed}/track1/{spec.name}")
    coiner = _Coiner(rng, spec.lexicon)
    by_split = _track1_queries(rng, spec, coiner, taken_qids)
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
        "documents.jsonl": _jsonl([{"id": d.doc_id, "content": d.content} for d in corpus]),
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
        files[f"examples_{split}.jsonl"] = _jsonl(examples)
        files[f"steps_{split}.jsonl"] = _jsonl(steps)
        files[f"guidance_{split}.jsonl"] = _jsonl(guidance)
        files[f"qrels_{split}.txt"] = _qrels(qrels)
        files[f"qrels_steps_{split}.txt"] = _qrels(step_qrels)
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


# --------------------------------------------------------------------------- Track 2


@dataclass
class _Conversation:
    conv_id: str
    turns: int


def _track2_plan(seed: int) -> dict[str, dict[str, list[_Conversation]]]:
    """Conversation ids and turn counts of every Track 2 domain and split.

    Decided for the whole release at once because the traps span domains: the BRIGHT-derived
    domains share some integer ids within a split, and every split must reach turn depth 5+.
    """
    rng = random.Random(f"{seed}/track2/plan")
    bright = [d.folder for d in TRACK2_DOMAINS if d.bright]
    pool = [n for n in range(60) if n != 2]
    rng.shuffle(pool)
    ids: dict[str, dict[str, list[str]]] = {d.folder: {} for d in TRACK2_DOMAINS}
    taken_ex: set[str] = set()
    for split in SPLITS:
        # Conversation "2" of dev exists in two domains, as it does upstream.
        shared = [2, pool.pop()] if split == "dev" else [pool.pop()]
        for folder in bright:
            own = [pool.pop() for _ in range(rng.choice((3, 4)) - len(shared))]
            ids[folder][split] = [str(n) for n in sorted(shared + own)]
        for spec in TRACK2_DOMAINS:
            if spec.bright:
                continue
            conv_ids = []
            for _ in range(rng.choice((3, 4))):
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


def _bright_pages(rng: random.Random, spec: _Track2Domain, coiner: _Coiner, slug_words: list[str]) -> list[list[str]]:
    """Document ids of 1-2 BRIGHT pages under one slug, chunked like "Kelvin_equation5.txt"."""
    slug = rng.choice(("{0}_and_{1}", "why_{0}_{1}", "{0}_{1}_{2}")).format(*slug_words)
    pages = []
    for _ in range(rng.randint(1, 2)):
        title = f"{coiner.word().capitalize()}_{rng.choice(spec.lexicon)}"
        separator = rng.choice(("", "_"))
        pages.append([f"{slug}/{title}{separator}{k}.txt" for k in range(rng.randint(3, 6))])
    return pages


def _track2_domain(spec: _Track2Domain, seed: int, plan: dict[str, list[_Conversation]]) -> dict[str, str]:
    rng = random.Random(f"{seed}/track2/{spec.folder}")
    coiner = _Coiner(rng, spec.lexicon)
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
                passage.content = _compose(rng, spec.lexicon, content, [], rng.randint(3, 4))
            facets = [f for p in pool for f in p.facets]
            hard_topics.append((entity, topic_words, facets))
            for doc_id in spare:
                # A neighbouring chunk of the same page: same topic, often a gold chunk's facet.
                content = [entity, rng.choice(topic_words), coiner.word()] + rng.sample(spec.lexicon, 3)
                if rng.random() < 0.6:
                    content.append(rng.choice(facets))
                rng.shuffle(content)
                corpus.append(_Passage(doc_id, _compose(rng, spec.lexicon, content, [], rng.randint(2, 3))))
            corpus += pool
            gold_count += len(pool)
            record = _track2_conversation(rng, spec, conv, entity, topic_words, pool)
            conversations.append(record)
            for turn in record["turns"]:
                qrels += [(f"{conv.conv_id}_turn_{turn['turn_id']}", d) for d in turn["gold_doc_ids"]]
        files[f"benchmark_{split}.json"] = json.dumps(conversations, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
        files[f"qrels_{split}.txt"] = _qrels(qrels)
    benchmark_ids = {c.conv_id for split in SPLITS for c in plan[split]}
    wanted = NEGATIVES_PER_GOLD * gold_count - (len(corpus) - gold_count)
    corpus += _track2_negatives(rng, spec, coiner, hard_topics, wanted, benchmark_ids)
    rng.shuffle(corpus)
    files["documents.jsonl"] = _jsonl([{"doc_id": p.doc_id, "content": p.content} for p in corpus])
    return files


def _track2_conversation(
    rng: random.Random,
    spec: _Track2Domain,
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
        answer = _compose(rng, spec.lexicon, [entity] + facets, [], 2)
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
        "original_answer": _compose(rng, spec.lexicon, [entity, t0, t1, t2], [], 2),
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
    spec: _Track2Domain,
    coiner: _Coiner,
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
            passages.append(_Passage(doc_id, _compose(rng, spec.lexicon, content, [], rng.randint(2, 3))))
    return passages


# --------------------------------------------------------------------------- entry point


def write_synthetic_release(out: Path, seed: int = DEFAULT_SEED) -> Path:
    """Write a small synthetic train/dev/test release in the v1.1 layout under ``out``.

    ``out/track1_tempo/<domain>/`` holds documents, examples, steps, guidance, qrels, step
    qrels and a duplicate map per split; ``out/track2_recor/<domain>/`` holds documents,
    benchmark (a JSON array of conversations) and qrels per split. Existing files of the same
    names are overwritten; nothing else is removed. The same ``seed`` gives byte-identical
    files. Returns ``out``.
    """
    out = Path(out)
    taken_qids: set[str] = set()
    for spec in TRACK1_DOMAINS:
        _write_files(out / TRACK1_DIR / spec.name, _track1_domain(spec, seed, taken_qids))
    plan = _track2_plan(seed)
    for spec in TRACK2_DOMAINS:
        _write_files(out / TRACK2_DIR / spec.folder, _track2_domain(spec, seed, plan[spec.folder]))
    return out


def _write_files(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in sorted(files):
        # newline="" keeps "\n" on every platform, so files stay byte-identical.
        with open(folder / name, "w", encoding="utf-8", newline="") as handle:
            handle.write(files[name])
