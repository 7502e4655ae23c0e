"""The pooling-and-labelling loop end to end, against a fake OpenAI-compatible server on 127.0.0.1:
pool, label, score, re-pool finds nothing new, re-labelling does nothing, a human override wins;
and the faults of the LLM leave pairs unlabelled, never labelled by default."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from support.fake_openai_server import TEST_KEY, FakeOpenAI, completion, http_error, user_text

from reteco.commands import main as workflow
from reteco.formats.reference import Reference
from reteco.formats.temporal_labels import LABELS_DIR, TemporalLabels
from reteco.formats.temporal_periods import PERIODS_FILE, read_periods
from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import write_synthetic_release
from reteco.release.synthetic.sample_runs import write_sample_runs
from reteco.scoring.retrieval import score_run

_QUESTION = re.compile(r"<<<BEGIN QUESTION (\w+)>>>\n(.*?)\n<<<END QUESTION \1>>>", re.DOTALL)
_DOC = re.compile(r"^document id: (.*)$", re.MULTILINE)


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    root = tmp_path_factory.mktemp("workflow")
    write_synthetic_release(root / "release")
    write_sample_runs(root / "release", root / "runs", split="test")
    return root


def first_topics(run: Path, n: int, out: Path) -> Path:
    """The lines of a run's first ``n`` topics (1b: of the steps of its first ``n`` queries)."""
    kept: list[str] = []
    for line in run.read_text().splitlines(keepends=True):
        query = line.split()[0].rsplit("_step", 1)[0]
        if query not in kept:
            kept.append(query)
        if kept.index(query) < n:
            out.write_text(out.read_text() + line if out.exists() else line)
    return out


@pytest.fixture
def setup(release, tmp_path):
    """A fresh test-split reference (1a, 1b) and two 1a runs over 6 of its 18 queries (the
    others are unranked): BM25 and a shuffled variant."""
    prepare_release(release / "release", "test", tmp_path / "ref", subtracks=("1a", "1b"))
    bm25 = first_topics(release / "runs" / "1a" / "run.txt", 6, tmp_path / "bm25.txt")
    lines = bm25.read_text().splitlines()
    by_topic: dict[str, list[str]] = {}
    for line in lines:
        by_topic.setdefault(line.split()[0], []).append(line.split()[2])
    other = tmp_path / "other.txt"
    with open(other, "w") as handle:
        for topic, docs in by_topic.items():
            docs = docs[5:15] + docs[:5]  # overlaps the BM25 top 10 in part
            handle.writelines(f"{topic} Q0 {d} {i + 1} {100 - i} other\n" for i, d in enumerate(docs))
    return tmp_path, tmp_path / "ref", bm25, other


def oracle_truth(ref: Path) -> dict[tuple[str, str], tuple[bool, list[str]]]:
    """(question text, doc id) -> (relevant, covered periods), as the offline oracle has them."""
    truth = {}
    for record in read_periods(ref / PERIODS_FILE).values():
        docs = set(record.oracle_relevant) | {d for p in record.periods for d in p.oracle_docs}
        for doc in docs:
            covers = [p.period for p in record.periods if doc in p.oracle_docs]
            truth[(record.text.strip(), doc)] = (doc in record.oracle_relevant, covers)
    return truth


def fake_labeller(truth, override=None):
    """A fake LLM that labels as the oracle does (or as ``override`` says for some docs)."""

    def reply(body):
        text = user_text(body)
        question = _QUESTION.search(text).group(2).strip()
        doc = _DOC.search(text).group(1).strip()
        relevant, covers = (override or {}).get(doc) or truth.get((question, doc), (False, []))
        if body["response_format"]["json_schema"]["name"] == "temporal_relevance":
            content = {"rationale": "fake: dated evidence" if relevant else "fake: no", "temporally_relevant": relevant}
        else:
            content = {"rationale": "fake coverage", "covered_periods": covers}
        return completion(json.dumps(content), model="fake-labeller-2027")

    return reply


@pytest.fixture
def server(monkeypatch):
    fake = FakeOpenAI()
    fake.start()
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    try:
        yield fake
    finally:
        fake.stop()


def judge_yaml(tmp_path: Path, server: FakeOpenAI) -> Path:
    path = tmp_path / "judge.yaml"
    path.write_text(
        f"prompt_version: 1\nmodel: fake-labeller\nbase_url: {server.base_url}\nbackoff_initial_s: 0.01\n"
        "backoff_max_s: 0.05\ntimeout_s: 5\nmax_retries: 2\nmax_reasks: 1\nconcurrency: 16\n",
        encoding="utf-8",
    )
    return path


def pool_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def label(tmp, ref_dir, pool, server, *extra) -> int:
    return workflow(
        ["label-temporal", "--ref", str(ref_dir), "--pool", str(pool), "--judge-config", str(judge_yaml(tmp, server)),
         "--cache-dir", str(tmp / "cache"), "--no-progress", *extra]
    )


def test_pool_label_score_repool_override(setup, server, capsys):
    tmp, ref, bm25, other = setup
    ref_1a = ref / "1a"
    oracle_scores = score_run(Reference.read(ref_1a), bm25.read_bytes()).scores
    assert oracle_scores["tp_10"] > 0 and oracle_scores["tc_10"] > 0 and oracle_scores["ndcg_fc_10"] > 0
    server.judge = fake_labeller(oracle_truth(ref_1a))

    # 1. pool the two runs: every top-10 pair, none labelled yet, with texts from the release.
    pool = tmp / "pool.jsonl"
    assert workflow(["pool", "--ref", str(ref_1a), "--release", str(RELEASE[0]), "--out", str(pool), str(bm25), str(other)]) == 0
    records = pool_lines(pool)
    reference = Reference.read(ref_1a)
    assert len({(r["query"], r["doc_id"]) for r in records}) == len(records)
    assert all(r["passage"] for r in records) and all(r["query_text"] for r in records)
    assert 6 * 10 < len(records) <= 6 * 15  # two overlapping top-10s of 6 queries
    assert len({r["query"] for r in records}) == 6
    both = [r for r in records if len(r["runs"]) == 2]
    assert both and all(r["best_rank"] <= 10 for r in records)

    # 2. label them: two questions per pair (every synthetic query has required periods).
    capsys.readouterr()
    assert label(tmp, ref_1a, pool, server) == 0
    assert server.chat_calls == 2 * len(records)
    # Issue 25: the summary counts every request sent, the preflight too (it left it out).
    assert server.all_chat_calls == 2 * len(records) + 1 and len(server.preflight_requests) == 1
    assert f"({2 * len(records) + 1} HTTP requests, 0 answers from the cache)" in capsys.readouterr().out
    labels = TemporalLabels.read(ref_1a / LABELS_DIR)
    assert len(labels.effective) == len(records)
    row = next(iter(labels.effective.values()))
    assert row.source == "llm" and row.labeller == "fake-labeller" and row.prompt_version == "temporal-labels/v1"
    assert row.judge["answers"]["temporal_relevance"]["reported_model"] == "fake-labeller-2027"
    assert len(row.judge["answers"]["period_coverage"]["request_hashes"]) == 1
    assert TEST_KEY not in (ref_1a / LABELS_DIR / "labels.jsonl").read_text()

    # 3. score with the frozen labels: they agree with the oracle on every pooled pair, so the
    #    figures are the oracle's, and nothing in the top 10 is unlabelled.
    result = score_run(Reference.read(ref_1a), bm25.read_bytes())
    for key in ("tp_10", "tr_10", "tc_10", "ndcg_fc_10", "ndcg_10"):
        assert result.scores[key] == pytest.approx(oracle_scores[key], abs=1e-15), key
    temporal = result.details["temporal"]
    assert temporal["source"] == "frozen"
    assert temporal["labels"]["content_hash"] == labels.content_hash
    assert temporal["unlabelled_top10"]["unlabelled"] == 0
    # A run that was not pooled meets unlabelled documents, and details.json counts them.
    unpooled = tmp / "deep.txt"
    unpooled.write_text("".join(_rerank(bm25, 20, 30)))
    deep = score_run(Reference.read(ref_1a), unpooled.read_bytes()).details["temporal"]["unlabelled_top10"]
    assert deep["unlabelled"] > 0 and deep["queries_with_unlabelled"] > 0

    # 4. re-pool: nothing new; re-label the old pool: nothing asked, nothing changed.
    again = tmp / "again.jsonl"
    assert workflow(["pool", "--ref", str(ref_1a), "--out", str(again), str(bm25), str(other)]) == 0
    assert pool_lines(again) == []
    calls = server.chat_calls
    assert label(tmp, ref_1a, pool, server) == 0
    assert server.chat_calls == calls
    assert TemporalLabels.read(ref_1a / LABELS_DIR).content_hash == labels.content_hash

    # 5. a human override wins: the first-ranked document of the first query is flipped.
    first = _top(bm25)[0]
    query = reference.topics[[t.topic_id for t in reference.topics].index(first[0])].key
    current = labels.label_of(query, first[1])
    review = tmp / "review.csv"
    assert workflow(["label-export", "--ref", str(ref_1a), "--pool", str(pool), "--out", str(review)]) == 0
    rows = list(csv.DictReader(io.StringIO(review.read_text(encoding="utf-8"))))
    assert len(rows) == len(records) and all(r["passage"] for r in rows)
    for r in rows:
        if (r["query"], r["doc_id"]) == (query, first[1]):
            r["temporally_relevant"] = "0" if current.temporally_relevant else "1"
            r["review_note"] = "checked by hand"
    with open(review, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert workflow(["label-import", "--ref", str(ref_1a), "--csv", str(review), "--reviewer", "alice"]) == 0
    labels = TemporalLabels.read(ref_1a / LABELS_DIR)
    human = labels.label_of(query, first[1])
    assert (human.source, human.labeller, human.overrides_line, human.rationale) == (
        "human", "alice", current.line, "checked by hand"
    )
    assert human.temporally_relevant is not current.temporally_relevant
    assert labels.manifest["history"][-1]["what"].startswith("label-import")
    after = score_run(Reference.read(ref_1a), bm25.read_bytes())
    unit = next(u for u in after.per_topic["per_unit"] if u["unit"] == query)
    before = next(u for u in result.per_topic["per_unit"] if u["unit"] == query)
    # The flipped document is at rank 1: TR moves by exactly 1/10.
    assert unit["tr_10"] - before["tr_10"] == pytest.approx(0.1 if human.temporally_relevant else -0.1, abs=1e-15)
    assert after.details["temporal"]["labels"]["counts"]["human_overrides"] == 1
    # The LLM never relabels the overridden pair.
    calls = server.chat_calls
    assert label(tmp, ref_1a, pool, server) == 0 and server.chat_calls == calls
    assert TemporalLabels.read(ref_1a / LABELS_DIR).label_of(query, first[1]).source == "human"


def test_1b_steps_pool_under_their_query(setup, server):
    tmp, ref, _, _ = setup
    ref_1b = ref / "1b"
    steps = first_topics(RELEASE[0].parent / "runs" / "1b" / "run.txt", 4, tmp / "steps.txt")
    pool = tmp / "pool_1b.jsonl"
    assert workflow(["pool", "--ref", str(ref_1b), "--release", str(RELEASE[0]), "--out", str(pool), str(steps)]) == 0
    records = pool_lines(pool)
    reference = Reference.read(ref_1b)
    assert len({r["query"] for r in records}) == 4
    assert {r["query"] for r in records} <= {t.unit for t in reference.topics}
    # Every step's top 10 lands under its query; shared documents pool once.
    per_query: dict[str, set[str]] = {}
    for line in steps.read_text().splitlines():
        topic, _, doc, rank, _, _ = line.split()
        if int(rank) <= 10:
            per_query.setdefault(topic.rsplit("_step", 1)[0], set()).add(doc)
    assert len(records) == sum(len(v) for v in per_query.values())
    server.judge = fake_labeller(oracle_truth(ref_1b))
    oracle = score_run(Reference.read(ref_1b), steps.read_bytes()).scores
    assert label(tmp, ref_1b, pool, server) == 0
    frozen = score_run(Reference.read(ref_1b), steps.read_bytes())
    assert frozen.details["temporal"]["source"] == "frozen"
    for key in ("tp_10", "tr_10", "tc_10", "ndcg_fc_10"):
        assert frozen.scores[key] == pytest.approx(oracle[key], abs=1e-15), key


def test_faults_leave_pairs_unlabelled_and_a_rerun_finishes_the_job(setup, server, capsys):
    tmp, ref, bm25, _ = setup
    ref_1a = ref / "1a"
    pool = tmp / "pool.jsonl"
    assert workflow(["pool", "--ref", str(ref_1a), "--release", str(RELEASE[0]), "--out", str(pool), str(bm25)]) == 0
    records = pool_lines(pool)
    truth = oracle_truth(ref_1a)
    bad_doc = records[0]["doc_id"]
    garbled_doc = records[1]["doc_id"]
    server.judge = fake_labeller(truth)
    # One document's questions always fail with 503; another's replies break the schema.
    server.rules.append((lambda b: f"document id: {bad_doc}\n" in user_text(b), http_error(503, "overloaded")))
    server.rules.append((lambda b: f"document id: {garbled_doc}\n" in user_text(b), completion('{"verdict": "maybe"}')))
    assert label(tmp, ref_1a, pool, server) == 4  # EXIT_INCOMPLETE: answers failed, the rest is kept
    err = capsys.readouterr().err
    assert "pairs of the pool are still unlabelled" in err and "HTTP 503" in err and "no usable reply" in err
    labels = TemporalLabels.read(ref_1a / LABELS_DIR)
    bad_pairs = {(r["query"], r["doc_id"]) for r in records if r["doc_id"] in (bad_doc, garbled_doc)}
    assert not any(pair in labels.effective for pair in bad_pairs)
    assert len(labels.effective) == len(records) - len(bad_pairs)
    assert TEST_KEY not in json.dumps(labels.manifest)

    # The server recovers: a rerun asks only for the missing pairs (the rest is labelled; a
    # garbled reply is replayed from the cache unless --retry-invalid).
    server.rules.clear()
    calls = server.chat_calls
    assert label(tmp, ref_1a, pool, server, "--retry-invalid") == 0
    labels = TemporalLabels.read(ref_1a / LABELS_DIR)
    assert len(labels.effective) == len(records)
    assert server.chat_calls - calls == 2 * len(bad_pairs)


def test_label_temporal_needs_passages_and_a_key(setup, server, monkeypatch):
    tmp, ref, bm25, _ = setup
    pool = tmp / "nopassage.jsonl"
    assert workflow(["pool", "--ref", str(ref / "1a"), "--out", str(pool), str(bm25)]) == 0
    assert all(r["passage"] is None for r in pool_lines(pool))
    assert label(tmp, ref / "1a", pool, server) == 1
    monkeypatch.delenv("OPENAI_API_KEY")
    full = tmp / "full.jsonl"
    assert workflow(["pool", "--ref", str(ref / "1a"), "--release", str(RELEASE[0]), "--out", str(full), str(bm25)]) == 0
    assert label(tmp, ref / "1a", full, server) == 1
    assert server.chat_calls == 0


def test_a_hostile_server_never_gets_its_echo_of_the_key_into_the_labels(setup, monkeypatch):
    tmp, ref, bm25, _ = setup
    server = FakeOpenAI(echo_auth=True)
    server.start()
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    try:
        server.judge = fake_labeller(oracle_truth(ref / "1a"))
        pool = tmp / "pool.jsonl"
        assert workflow(["pool", "--ref", str(ref / "1a"), "--release", str(RELEASE[0]), "--out", str(pool), str(bm25)]) == 0
        label(tmp, ref / "1a", pool, server)
    finally:
        server.stop()
    text = (ref / "1a" / LABELS_DIR / "labels.jsonl").read_text()
    assert text and TEST_KEY not in text and "[REDACTED]" in text


# ---------------------------------------------------------------- helpers


RELEASE: list[Path] = []  # the module's synthetic release folder (set by the autouse fixture)


@pytest.fixture(autouse=True)
def _remember_release(release):
    RELEASE[:] = [release / "release"]


def _top(run: Path) -> list[tuple[str, str]]:
    seen, out = set(), []
    for line in run.read_text().splitlines():
        topic, _, doc, rank, _, _ = line.split()
        if topic not in seen:
            seen.add(topic)
            out.append((topic, doc))
    return out


def _rerank(run: Path, start: int, stop: int) -> list[str]:
    """Each topic's documents at ranks start+1..stop of a run, as a new run."""
    by_topic: dict[str, list[str]] = {}
    for line in run.read_text().splitlines():
        by_topic.setdefault(line.split()[0], []).append(line.split()[2])
    return [
        f"{t} Q0 {d} {i + 1} {100 - i} deep\n" for t, docs in by_topic.items() for i, d in enumerate(docs[start:stop])
    ]
