"""The relevance round end to end (issue 21), against the fake OpenAI server on 127.0.0.1:
relevance-pool -> label-relevance -> label-export --kind relevance -> label-import -> score
--round, with the requests counted (each pair once; a rerun nothing; a child killed midway, then a
rerun, pays only for what the cache lacks); and against the real llama-server when
../shared/tools/llama.cpp is there."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.fake_openai_server import TEST_KEY, completion, first_user_text
from support.llama_server import needs_llama_server, running_llama_server
from support.paths import REPO_ROOT

from reteco.commands import main
from reteco.formats.file_digest import sha256_file
from reteco.formats.reference import Reference
from reteco.formats.relevance_labels import ROUND_QRELS, RelevanceLabels
from reteco.formats.temporal_periods import read_periods
from reteco.judge import load_judge_config
from reteco.problems import EXIT_INCOMPLETE, InputError
from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import write_synthetic_release
from reteco.release.synthetic.sample_runs import write_sample_runs
from reteco.workbench.labels.relevance import label_round, open_or_create_round, topic_texts
from reteco.workbench.labels.relevance_prompts import load_prompts

_DOC = re.compile(r"^document id: (.*)$", re.MULTILINE)
TOPICS = 4  # topics of each run: a small pool


def grade_of(doc: str) -> int:
    """The fake assessor's grade of a document: a hash, so every level occurs."""
    return int(hashlib.sha256(doc.encode()).hexdigest(), 16) % 4


def relevance_labeller(broken: frozenset[str] = frozenset()):
    """Grades as ``grade_of`` says; a document in ``broken`` gets a reply that is not JSON."""

    def reply(body):
        doc = _DOC.search(first_user_text(body)).group(1).strip()
        if doc in broken:
            return completion("no idea", model="fake-assessor")
        grade = grade_of(doc)
        return completion(json.dumps({"rationale": f"fake grade {grade}", "relevance": grade}), model="fake-assessor")

    return reply


@pytest.fixture(scope="module")
def phase(tmp_path_factory):
    """A prepared 1a reference (test split), its release, and a bulk download of two runs."""
    root = tmp_path_factory.mktemp("relevance_round")
    write_synthetic_release(root / "release")
    runs = write_sample_runs(root / "release", root / "runs", split="test")
    prepare_release(root / "release", "test", root / "ref", subtracks=("1a", "2a", "2c"))
    for sub in ("2a", "2c"):  # a Track-2 bulk download: DIR/<sub-track>/<submission>
        (root / "subs2" / sub).mkdir(parents=True)
        shutil.copyfile(runs[sub], root / "subs2" / sub / "kit__bm25.txt")
    lines = [line for line in runs["1a"].read_text().splitlines() if line.strip()]
    topics = list(dict.fromkeys(line.split()[0] for line in lines))[:TOPICS]
    subs = root / "subs"
    subs.mkdir()
    kept = [line for line in lines if line.split()[0] in topics]
    (subs / "kit__bm25.txt").write_text("\n".join(kept) + "\n")
    with open(subs / "kit__shifted.txt", "w") as handle:  # the BM25 ranking from rank 6 on: half new pairs
        for topic in topics:
            docs = [line.split()[2] for line in kept if line.split()[0] == topic][5:20]
            handle.writelines(f"{topic} Q0 {d} {i + 1} {100 - i} shifted\n" for i, d in enumerate(docs))
    return root


@pytest.fixture
def server(fake_openai, monkeypatch):
    """The fake server (conftest's), grading as ``relevance_labeller``; the key in the environment."""
    fake_openai.judge = relevance_labeller()
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    return fake_openai


def judge_yaml(folder: Path, base_url: str, concurrency: int = 8) -> Path:
    path = folder / "judge.yaml"
    path.write_text(
        f"prompt_version: 1\nmodel: fake-assessor\nbase_url: {base_url}\nbackoff_initial_s: 0.01\n"
        f"backoff_max_s: 0.05\ntimeout_s: 5\nmax_retries: 2\nmax_reasks: 1\nconcurrency: {concurrency}\n",
        encoding="utf-8",
    )
    return path


def expected_pool(phase: Path) -> set[tuple[str, str]]:
    """The top-10 pairs of the runs the qrels do not judge, read from the files directly."""
    reference = Reference.read(phase / "ref" / "1a")
    key_of = {t.topic_id: t.key for t in reference.topics} | {t.key: t.key for t in reference.topics}
    judged = {(j.key, j.doc_id) for j in reference.judgments}
    pairs = set()
    for run in (phase / "subs").iterdir():
        ranked: dict[str, list[tuple[int, str]]] = {}
        for line in run.read_text().splitlines():
            topic, _, doc, rank, *_ = line.split()
            ranked.setdefault(key_of[topic], []).append((int(rank), doc))
        for key, docs in ranked.items():
            pairs |= {(key, doc) for _, doc in sorted(docs)[:10] if (key, doc) not in judged}
    return pairs


def pool_command(phase: Path, tmp: Path, round_dir: Path) -> list[str]:
    return ["relevance-pool", "--ref", str(phase / "ref" / "1a"), "--submissions", str(phase / "subs"),
            "--round", str(round_dir), "--release", str(phase / "release"), "--out", str(tmp / "pool.jsonl")]


def label_command(tmp: Path, round_dir: Path, config: Path) -> list[str]:
    return ["label-relevance", "--round", str(round_dir), "--pool", str(tmp / "pool.jsonl"),
            "--judge-config", str(config), "--judge-cache", str(tmp / "cache"), "--no-progress"]


def round_qrels(round_dir: Path) -> dict[tuple[str, str], int]:
    out = {}
    for line in (round_dir / ROUND_QRELS).read_text().splitlines():
        key, _, doc, level = line.split()
        out[(key, doc)] = int(level)
    return out


def unjudged_10(details: Path) -> float:
    return json.loads(details.read_text())["unjudged"]["overall"]["unjudged_10"]


def test_pool_label_review_import_score(phase, tmp_path, server, capsys):
    round_dir = tmp_path / "round"
    config = judge_yaml(tmp_path, server.base_url)
    wanted = expected_pool(phase)
    assert len(wanted) > 20

    # 1. Pool: exactly the unjudged top-10 pairs of both runs, each with its topic text and passage.
    assert main(pool_command(phase, tmp_path, round_dir)) == 0
    pool = [json.loads(line) for line in (tmp_path / "pool.jsonl").read_text().splitlines()]
    assert {(r["query"], r["doc_id"]) for r in pool} == wanted and len(pool) == len(wanted)
    assert all(r["passage"] and r["query_text"] and r["subtracks"] == ["1a"] for r in pool)

    # 2. Label: one request per pair (the preflight apart), every grade the assessor's.
    assert main(label_command(tmp_path, round_dir, config)) == 0
    assert server.chat_calls == len(wanted)
    assert round_qrels(round_dir) == {pair: grade_of(pair[1]) for pair in wanted}
    labels = RelevanceLabels.read(round_dir)
    row = next(iter(labels.effective.values()))
    assert row.source == "llm" and row.labeller == "fake-assessor" and row.prompt_version == "relevance-labels/v2"
    assert row.labelled_at.endswith("Z") and row.judge["signature"] and row.judge["request_hashes"]
    assert row.judge["shown"] == ["time_frame", "question", "passage"]
    assert labels.manifest["files"][ROUND_QRELS] == sha256_file(round_dir / ROUND_QRELS)

    # 3. Nothing is paid twice: the same pool again sends nothing; a new round over the same
    #    cache replays every reply (no judgment request), giving the same labels.
    calls = server.all_chat_calls
    assert main(label_command(tmp_path, round_dir, config)) == 0
    assert server.all_chat_calls == calls
    assert main(label_command(tmp_path, tmp_path / "round_again", config)) == 0
    assert server.chat_calls == len(wanted)
    assert round_qrels(tmp_path / "round_again") == round_qrels(round_dir)
    # Pooling again finds nothing new: the round labels every unjudged pair now.
    assert main(pool_command(phase, tmp_path, round_dir)) == 0
    assert (tmp_path / "pool.jsonl").read_text() == ""
    capsys.readouterr()

    # 4. Review: every label at the boundary (1 and 2) plus one of each other label.
    csv_path = tmp_path / "review.csv"
    assert main(["label-export", "--kind", "relevance", "--labels", str(round_dir), "--per-label", "1",
                 "--out", str(csv_path)]) == 0
    rows = list(csv.DictReader(io.StringIO(csv_path.read_text(encoding="utf-8"))))
    boundary = {p for p, level in round_qrels(round_dir).items() if level in (1, 2)}
    assert {(r["query"], r["doc_id"]) for r in rows if r["why_reviewed"].startswith("boundary")} == boundary
    others = [r for r in rows if not r["why_reviewed"].startswith("boundary")]
    assert sorted(int(r["relevance"]) for r in others) == [0, 3]
    assert {r["review_kind"] for r in rows} == {"post-edit (the LLM's label and rationale shown)"}
    # Bounded: --boundary 5 reviews a seeded uniform sample of 5 of the boundary pairs, the same each time.
    samples = []
    for name in ("bounded.csv", "bounded_again.csv"):
        assert main(["label-export", "--kind", "relevance", "--labels", str(round_dir), "--per-label", "1",
                     "--boundary", "5", "--out", str(tmp_path / name)]) == 0
        bounded = list(csv.DictReader(io.StringIO((tmp_path / name).read_text(encoding="utf-8"))))
        samples.append({(r["query"], r["doc_id"]) for r in bounded if r["why_reviewed"].startswith("boundary")})
        assert len(bounded) == 5 + sum(1 for r in bounded if not r["why_reviewed"].startswith("boundary"))
    assert len(samples[0]) == 5 and samples[0] < boundary and samples[0] == samples[1]
    assert "5 boundary 1/2" in capsys.readouterr().out
    # The reviewer raises one boundary pair to 3 and lowers another to 0.
    changed = {}
    for r in rows:
        if r["why_reviewed"].startswith("boundary") and len(changed) < 2:
            r["relevance"] = "3" if not changed else "0"
            r["review_note"] = "reviewed"
            changed[(r["query"], r["doc_id"])] = int(r["relevance"])
    with open(csv_path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    before = sha256_file(round_dir / ROUND_QRELS)
    assert main(["label-import", "--kind", "relevance", "--labels", str(round_dir), "--csv", str(csv_path),
                 "--reviewer", "A. Assessor"]) == 0
    assert "2 labels overridden" in capsys.readouterr().out
    after = round_qrels(round_dir)
    assert {p: after[p] for p in changed} == changed
    labels = RelevanceLabels.read(round_dir)
    overrides = [r for r in labels.rows if r.source == "human"]
    assert len(overrides) == 2 and all(r.labeller == "A. Assessor" and r.overrides_line for r in overrides)
    assert sha256_file(round_dir / ROUND_QRELS) != before
    # The same file again is stale (its label_line names the replaced rows): refused, nothing written.
    assert main(["label-import", "--kind", "relevance", "--labels", str(round_dir), "--csv", str(csv_path),
                 "--reviewer", "A. Assessor"]) == 1
    assert "exported before a later change" in capsys.readouterr().err

    # 5. Scoring with the round: every top-10 pair of the pooled run is judged now.
    run = phase / "subs" / "kit__bm25.txt"
    assert main(["score", "--ref", str(phase / "ref" / "1a"), "--res", str(run), "--out", str(tmp_path / "plain")]) == 0
    assert main(["score", "--ref", str(phase / "ref" / "1a"), "--res", str(run), "--out", str(tmp_path / "scored"),
                 "--round", str(round_dir / ROUND_QRELS)]) == 0
    # Only the empty slots of unranked topics stay unjudged (each such topic: 10 of 10), hand-computed
    # from the run's topics; without the round, the unjudged pairs of the ranked topics count too.
    topics = len(Reference.read(phase / "ref" / "1a").topics)
    ranked = {line.split()[0] for line in run.read_text().splitlines()}
    assert len(ranked) == TOPICS
    assert unjudged_10(tmp_path / "scored" / "details.json") == pytest.approx((topics - TOPICS) / topics, abs=1e-12)
    bm25_pairs = sum(1 for r in pool if "1a/kit__bm25.txt" in r["runs"])  # its unjudged top-10 pairs
    assert unjudged_10(tmp_path / "plain" / "details.json") == pytest.approx(
        (topics - TOPICS + bm25_pairs / 10) / topics, abs=1e-12)
    details = json.loads((tmp_path / "scored" / "details.json").read_text())
    assert sha256_file(round_dir / ROUND_QRELS) in json.dumps(details)
    # No round label reaches what a participant sees: the page and the log name no pooled-only document.
    captured = capsys.readouterr()
    page = (tmp_path / "scored" / "detailed_results.html").read_text() + captured.out + captured.err
    plain_page = (tmp_path / "plain" / "detailed_results.html").read_text()
    assert not [d for _, d in wanted if d in page and d not in plain_page]


def test_a_track2_phase_pools_each_pair_once_with_the_turn_text(phase, tmp_path):
    """2a and 2c rank the same turns: a pair both retrieve is one record (one call); 2a's turn
    texts come from the release's benchmark, 2c's from its reference; none is judged by the qrels."""
    assert main(["relevance-pool", "--ref", str(phase / "ref"), "--submissions", str(phase / "subs2"),
                 "--round", str(tmp_path / "round"), "--release", str(phase / "release"),
                 "--out", str(tmp_path / "pool.jsonl")]) == 0
    pool = [json.loads(line) for line in (tmp_path / "pool.jsonl").read_text().splitlines()]
    assert pool and len({(r["query"], r["doc_id"]) for r in pool}) == len(pool)
    assert {tuple(r["subtracks"]) for r in pool} == {("2a", "2c")}  # the same run under both
    assert all(r["query_text"] and r["passage"] and r["runs"] == ["2a/kit__bm25.txt", "2c/kit__bm25.txt"] for r in pool)
    judged = {(j.key, j.doc_id) for sub in ("2a", "2c") for j in Reference.read(phase / "ref" / sub).judgments}
    from_release = topic_texts(Reference.read(phase / "ref" / "2a"), phase / "release")
    from_reference = topic_texts(Reference.read(phase / "ref" / "2c"), None)
    assert from_release and {k: from_release[k] for k in from_reference} == from_reference
    assert not judged & {(r["query"], r["doc_id"]) for r in pool}


def block(text: str, name: str) -> str | None:
    """The content of a user message's block ``name`` (None when the message has none)."""
    found = re.search(rf"<<<BEGIN {name} (\w+)>>>\n(.*?)\n<<<END {name} \1>>>", text, re.DOTALL)
    return found.group(2) if found else None


def test_the_labeller_sees_the_conversation_of_a_turn_and_the_time_frame_of_a_query(phase, tmp_path, server):
    """Prompt version 2: a 2a turn's request holds the turns before it (none for a first turn), a
    1a query's request its period; each label records the blocks shown, the round's queries.jsonl
    their texts."""
    config = judge_yaml(tmp_path, server.base_url)
    # Track 2: the pool of the 2a and 2c runs, labelled.
    assert main(["relevance-pool", "--ref", str(phase / "ref"), "--submissions", str(phase / "subs2"),
                 "--round", str(tmp_path / "round2"), "--release", str(phase / "release"),
                 "--out", str(tmp_path / "pool.jsonl")]) == 0
    pool = [r for r in map(json.loads, (tmp_path / "pool.jsonl").read_text().splitlines()) if r["best_rank"] == 1][:40]
    (tmp_path / "pool.jsonl").write_text("".join(json.dumps(r) + "\n" for r in pool))
    assert main(label_command(tmp_path, tmp_path / "round2", config)) == 0
    # The turns before each turn, read from the release's benchmark directly.
    earlier: dict[str, list[str]] = {}
    for path in sorted((phase / "release" / "track2_recor").glob("*/benchmark_test.json")):
        for conversation in json.loads(path.read_text()):
            for turn in conversation["turns"]:
                key = f"{path.parent.name}/{conversation['id']}_turn_{turn['turn_id']}"
                earlier[key] = [t["query"] for t in conversation["turns"] if t["turn_id"] < turn["turn_id"]]
    by_doc = {first_user_text(r.body) for r in server.chat_requests}
    seen_later_turn = False
    for record in pool:
        texts = [m for m in by_doc if f"document id: {record['doc_id']}\n" in m and block(m, "QUESTION") == record["query_text"]]
        assert texts and all(block(m, "CONVERSATION") is not None and block(m, "TIME_FRAME") is None for m in texts)
        before = earlier[record["query"]]
        # The turn's own request: its conversation holds every turn before it (a first turn: none).
        assert any(all(query in block(m, "CONVERSATION") for query in before) if before else
                   block(m, "CONVERSATION") == "(none: the question opens the conversation)" for m in texts)
        seen_later_turn |= bool(before)
    assert seen_later_turn
    labels = RelevanceLabels.read(tmp_path / "round2")
    assert {tuple(r.judge["shown"]) for r in labels.effective.values()} == {("conversation", "question", "passage")}
    assert all(labels.queries[r["query"]].context == r["context"] for r in pool)

    # Track 1: a 1a query's request holds its time anchors and its periods' time scopes.
    server.requests.clear()
    assert main(pool_command(phase, tmp_path, tmp_path / "round1")) == 0
    assert main(label_command(tmp_path, tmp_path / "round1", config)) == 0
    periods = read_periods(phase / "ref" / "1a" / "temporal_periods.jsonl")
    requests = [first_user_text(r.body) for r in server.chat_requests]
    assert requests
    for text in requests:
        (record,) = [p for p in periods.values() if block(text, "QUESTION") == p.text.strip()]
        frame = block(text, "TIME_FRAME")
        assert frame is not None and block(text, "CONVERSATION") is None
        assert all(anchor in frame for anchor in record.key_time_anchors)
        assert all(p.scope_text() in frame and p.description in frame for p in record.periods)
        assert any(p.scope_text() for p in record.periods)


def test_a_round_labelled_with_another_prompt_version_is_a_new_round(phase, tmp_path, server):
    """Version 1's labels and version 2's are two rounds (two signatures): over the same cache, the
    version-2 round asks every pair again, once; a version-1 round refuses version-2 labels."""
    assert main(pool_command(phase, tmp_path, tmp_path / "v1")) == 0
    pool = [json.loads(line) for line in (tmp_path / "pool.jsonl").read_text().splitlines()]
    config = load_judge_config(judge_yaml(tmp_path, server.base_url))
    old = label_round(open_or_create_round(tmp_path / "v1"), pool, config, prompts=load_prompts(1),
                      cache_dir=tmp_path / "cache", progress=False)
    assert old.labelled == server.chat_calls == len(pool)
    new = label_round(open_or_create_round(tmp_path / "v2"), tmp_path / "pool.jsonl", config,
                      cache_dir=tmp_path / "cache", progress=False)
    assert new.labelled == len(pool) and new.cached_answers == 0 and server.chat_calls == 2 * len(pool)
    again = label_round(open_or_create_round(tmp_path / "v2_again"), tmp_path / "pool.jsonl", config,
                        cache_dir=tmp_path / "cache", progress=False)
    assert again.cached_answers == len(pool) and server.chat_calls == 2 * len(pool)  # once
    v1, v2 = RelevanceLabels.read(tmp_path / "v1"), RelevanceLabels.read(tmp_path / "v2")
    signatures = {name: {r.judge["signature"] for r in labels.effective.values()} for name, labels in
                  (("v1", v1), ("v2", v2))}
    assert len(signatures["v1"]) == len(signatures["v2"]) == 1 and signatures["v1"] != signatures["v2"]
    assert all(r.judge["shown"] == ["question", "passage"] for r in v1.effective.values())
    assert v1.queries[pool[0]["query"]].context is None
    assert new.no_context == 0
    # A pool without the context (made before version 2) is labelled, and the report says how many pairs lacked it.
    bare = label_round(open_or_create_round(tmp_path / "bare"), [{k: v for k, v in r.items() if k != "context"}
                                                                   for r in pool[:3]], config,
                       cache_dir=tmp_path / "cache", progress=False)
    assert bare.no_context == bare.labelled == 3
    with pytest.raises(InputError, match="relevance-labels/v1; relevance-labels/v2 labels a new round"):
        label_round(v1, tmp_path / "pool.jsonl", config, cache_dir=tmp_path / "cache", progress=False)


def test_invalid_answers_are_left_unlabelled_then_reviewed_by_hand(phase, tmp_path, server, capsys):
    round_dir = tmp_path / "round"
    assert main(pool_command(phase, tmp_path, round_dir)) == 0
    pool = [json.loads(line) for line in (tmp_path / "pool.jsonl").read_text().splitlines()]
    broken = frozenset(sorted({r["doc_id"] for r in pool})[:2])
    server.judge = relevance_labeller(broken)
    config = judge_yaml(tmp_path, server.base_url)
    assert main(label_command(tmp_path, round_dir, config)) == EXIT_INCOMPLETE
    err = capsys.readouterr().err
    unlabelled = {(r["query"], r["doc_id"]) for r in pool if r["doc_id"] in broken}
    assert f"{len(unlabelled)} pairs of the pool are still unlabelled" in err and "Traceback" not in err
    assert not set(round_qrels(round_dir)) & unlabelled
    # Asked once and re-asked once (max_reasks: 1), no more.
    assert server.chat_calls == len(pool) + len(unlabelled)

    csv_path = tmp_path / "review.csv"
    assert main(["label-export", "--kind", "relevance", "--labels", str(round_dir), "--pool", str(tmp_path / "pool.jsonl"),
                 "--per-label", "0", "--out", str(csv_path)]) == 0
    rows = list(csv.DictReader(io.StringIO(csv_path.read_text(encoding="utf-8"))))
    failed = [r for r in rows if r["why_reviewed"].startswith("no label")]
    assert {(r["query"], r["doc_id"]) for r in failed} == unlabelled and all(r["passage"] for r in failed)
    for r in failed:
        r["relevance"] = "2"
    with open(csv_path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert main(["label-import", "--kind", "relevance", "--labels", str(round_dir), "--csv", str(csv_path),
                 "--reviewer", "B. Reviewer"]) == 0
    assert f"{len(unlabelled)} pairs labelled by hand" in capsys.readouterr().out
    assert all(round_qrels(round_dir)[p] == 2 for p in unlabelled)
    # A label off the scale is refused with the file and line, nothing written.
    assert main(["label-export", "--kind", "relevance", "--labels", str(round_dir), "--out", str(csv_path)]) == 0
    rows = list(csv.DictReader(io.StringIO(csv_path.read_text(encoding="utf-8"))))
    rows[0]["relevance"] = "7"
    with open(csv_path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    before = sha256_file(round_dir / "labels.jsonl")
    assert main(["label-import", "--kind", "relevance", "--labels", str(round_dir), "--csv", str(csv_path),
                 "--reviewer", "B. Reviewer"]) == 1
    err = capsys.readouterr().err
    assert "review.csv" in err and ":2" in err and "relevance must be one of 0 to 3" in err and "Traceback" not in err
    assert sha256_file(round_dir / "labels.jsonl") == before


@pytest.mark.slow
def test_a_killed_labelling_run_rerun_pays_only_for_what_it_lacks(phase, tmp_path, slow_judge_server, capsys,
                                                                   monkeypatch):
    """SIGKILL of a label-relevance child mid-run; the rerun replays what the child's cache holds."""
    server = slow_judge_server(0.05, relevance_labeller())
    round_dir = tmp_path / "round"
    assert main(pool_command(phase, tmp_path, round_dir)) == 0
    pairs = len((tmp_path / "pool.jsonl").read_text().splitlines())
    concurrency = 2
    config = judge_yaml(tmp_path, server.base_url, concurrency=concurrency)
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    # The killed child's claims (the requests in flight) are waited out by the rerun until their
    # lease ends: 1 s instead of the default 60 s (the rerun starts after the kill: nothing competes).
    monkeypatch.setenv("RETECO_JUDGE_CLAIM_LEASE_S", "1")
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "src"))
    child = subprocess.Popen([sys.executable, "-m", "reteco", *label_command(tmp_path, round_dir, config)],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while server.chat_calls < pairs // 2:
            assert child.poll() is None, "the child ended before it was killed"
            assert time.monotonic() < deadline, "the child made too few requests"
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    paid_before = server.chat_calls
    assert paid_before < pairs
    assert not (round_dir / ROUND_QRELS).exists() or round_qrels(round_dir) == {}

    capsys.readouterr()
    code = main(label_command(tmp_path, round_dir, config))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    paid_after = server.chat_calls - paid_before
    # Every pair is labelled; the rerun paid for the pairs the child had not been answered for,
    # and at most the requests in flight at the kill (answered, not yet stored) a second time.
    assert len(round_qrels(round_dir)) == pairs
    assert pairs - paid_before <= paid_after <= pairs - paid_before + concurrency
    cached = int(re.search(r"(\d+) answers from the cache", captured.out).group(1))
    assert cached + paid_after == pairs and cached >= paid_before - concurrency


@needs_llama_server
@pytest.mark.slow
def test_the_round_against_a_real_llama_server(phase, tmp_path, monkeypatch, capsys):
    """label-relevance through llama.cpp's llama-server (random weights: its grammar-constrained
    decoding keeps every reply in the strict schema, so every pair gets a grade 0..3)."""
    with running_llama_server("tiny-assessor", tmp_path / "server.log") as url:
        monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
        round_dir = tmp_path / "round"
        assert main(pool_command(phase, tmp_path, round_dir)) == 0
        pool = [json.loads(line) for line in (tmp_path / "pool.jsonl").read_text().splitlines()][:6]
        (tmp_path / "pool.jsonl").write_text("".join(json.dumps(r) + "\n" for r in pool))
        config = tmp_path / "llama.yaml"
        config.write_text(f"prompt_version: 1\nmodel: tiny-assessor\nbase_url: {url}\n"
                          "max_completion_tokens: 60\nconcurrency: 2\n", encoding="utf-8")
        code = main(label_command(tmp_path, round_dir, config))
        captured = capsys.readouterr()
        labels = RelevanceLabels.read(round_dir)
        # Random weights may run out of tokens before closing the JSON: such a pair is "invalid"
        # (exit 4, said on stderr), never given a made-up grade.
        assert code in (0, EXIT_INCOMPLETE), captured.err
        assert len(labels.effective) + captured.err.count("unlabelled: ") == len(pool)
        assert all(r.judge["reported_model"] == "tiny-assessor" for r in labels.effective.values())
        assert all(0 <= level <= 3 for level in round_qrels(round_dir).values())
        # Again: nothing is asked (labelled pairs) or everything left comes from the cache.
        main(label_command(tmp_path, round_dir, config))
        assert re.search(r"labelled now, \d+ left unlabelled after faults \(0 HTTP requests", capsys.readouterr().out)


def test_labels_reach_the_store_while_the_run_goes_on(phase, tmp_path, server):
    """Streaming: with one request in flight and an append every 5 labels, when the server answers
    request k the round's labels.jsonl already holds the labels of all but the last < 5 + 1 before it."""
    assert main(pool_command(phase, tmp_path, tmp_path / "round")) == 0
    round_dir = tmp_path / "round"
    labels = open_or_create_round(round_dir)
    seen_rows: list[tuple[int, int]] = []  # (request number, rows in labels.jsonl when it arrived)
    grade = relevance_labeller()

    def reply(body):
        seen_rows.append((len(seen_rows) + 1, len((round_dir / "labels.jsonl").read_text().splitlines())))
        return grade(body)

    server.judge = reply
    config = load_judge_config(judge_yaml(tmp_path, server.base_url, concurrency=1))
    report = label_round(labels, tmp_path / "pool.jsonl", config, cache_dir=tmp_path / "cache", progress=False,
                         flush_every=5)
    assert report.labelled == len(seen_rows) == 50
    assert all(k - 6 <= rows <= k - 1 and rows % 5 == 0 for k, rows in seen_rows)
    assert seen_rows[-1] == (50, 45)
    assert len(RelevanceLabels.read(round_dir).effective) == 50
