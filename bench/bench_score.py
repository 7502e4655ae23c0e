"""Benchmark: ``reteco score`` end to end against a plain pytrec_eval pipeline, on a 1a-sized run.

1. Generates (deterministically, from ``--seed``) into ``--out`` (default ``bench/out/``, git-ignored):

   - ``ref_1a/``: a sub-track 1a reference folder written by ``Reference.write``: ``--topics``
     topics over the 13 TEMPO domains (keys ``<domain>/<query id>``), 1-20 relevant documents per
     topic, and a ``DocIdIndex`` over a corpus of ``--corpus`` TEMPO-style ids
     (``bitcoin/25785deb_4434.txt``);
   - ``run.txt``: a TREC run, ``--docs-per-topic`` lines per topic (``topic Q0 docid rank score
     tag``), scores strictly decreasing within a topic (4 decimals, no ties, not even in
     trec_eval's 32-bit floats), mostly ids of the topic's domain corpus, some relevant ones
     near the top, and in a few topics a few unknown ids (ghost ids and ids of another domain's
     corpus) and a few repeated ids;
   - ``anomalies.json``: which topics hold unknown or repeated ids (to explain score differences).

   The data is reused when ``params.json`` matches the requested size and seed.

2. Runs, alternating, ``--rounds`` times each: (a) ``reteco score --ref --res --out`` and (b)
   ``bench/plain_pytrec_eval.py``, each as a child process whose wall time and peak RSS
   (``os.wait4``'s ``ru_maxrss``, that child alone) are recorded; prints a markdown table with
   the rounds, the medians and the ratio, then compares the two pipelines' means and per-topic
   nDCG@10 and attributes each differing topic to the anomaly it contains.

    .venv/bin/python bench/bench_score.py                 # default size: 10,000 x 1,000 = 10M lines
    .venv/bin/python bench/bench_score.py --topics 500 --docs-per-topic 100 --corpus 50000  # smoke
    .venv/bin/python bench/bench_score.py --clean         # ... and delete the generated data after
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from reteco.formats.corpus_index import DocIdIndex
from reteco.formats.reference import Judgment, Reference, Topic

HERE = Path(__file__).resolve().parent
DOMAINS = [
    "bitcoin", "cardano", "economics", "genealogy", "history", "hsm", "iota",
    "law", "monero", "politics", "quant", "travel", "workplace",
]  # fmt: skip
TAG = "bench"
SCORE_TICKS = 10_000  # scores are written with 4 decimals


# --------------------------------------------------------------------------- generation


def _corpus(rng: np.random.Generator, size: int, docs_per_topic: int) -> dict[str, list[str]]:
    """Per domain, distinct ids ``<domain>/<8 hex>_<n>.txt`` (sizes uneven, as in TEMPO)."""
    weights = rng.uniform(0.4, 1.6, len(DOMAINS))
    sizes = np.maximum(np.floor(weights / weights.sum() * size).astype(np.int64), docs_per_topic + 50)
    corpus = {}
    for domain, n in zip(DOMAINS, sizes.tolist()):
        ids: set[str] = set()
        while len(ids) < n:
            need = n - len(ids)
            hexes = rng.integers(0, 2**32, need, dtype=np.uint64).tolist()
            chunks = rng.integers(0, 12_000, need).tolist()
            ids.update(f"{domain}/{h:08x}_{c}.txt" for h, c in zip(hexes, chunks))
        corpus[domain] = sorted(ids)
    return corpus


def generate(out: Path, topics_n: int, docs_per_topic: int, corpus_size: int, seed: int, topic_order: str = "reference") -> dict:
    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    corpus = _corpus(rng, corpus_size, docs_per_topic)
    # One flat id array: the domains' corpora in DOMAINS order, then ghost ids (in no corpus).
    start = {}
    flat: list[str] = []
    for domain in DOMAINS:
        start[domain] = len(flat)
        flat.extend(corpus[domain])
    size = {d: len(corpus[d]) for d in DOMAINS}
    known = len(flat)
    ghosts: list[str] = []
    corpus_sets = {d: set(corpus[d]) for d in DOMAINS}
    while len(ghosts) < 20_000:
        d = DOMAINS[int(rng.integers(len(DOMAINS)))]
        ghost = f"{d}/{int(rng.integers(0, 2**32)):08x}_{int(rng.integers(0, 12_000))}.txt"
        if ghost not in corpus_sets[d]:
            ghosts.append(ghost)
    del corpus_sets
    flat.extend(ghosts)
    all_ids = pa.array(flat, pa.string())
    ghost_of_domain = {d: [known + i for i, g in enumerate(ghosts) if g.startswith(d + "/")] for d in DOMAINS}

    # Topics: TEMPO-style query ids, unique within a domain; keys sorted (run order = key order).
    domain_weights = rng.uniform(0.5, 1.5, len(DOMAINS))
    domain_of = rng.choice(len(DOMAINS), topics_n, p=domain_weights / domain_weights.sum())
    seen: set[str] = set()
    topic_list: list[tuple[str, str, str]] = []
    for d in domain_of.tolist():
        while True:
            topic_id = f"{int(rng.integers(100_000, 1_000_000))}_{int(rng.integers(0, 60))}"
            key = f"{DOMAINS[d]}/{topic_id}"
            if key not in seen:
                seen.add(key)
                topic_list.append((key, DOMAINS[d], topic_id))
                break
    topic_list.sort()
    topics = [Topic(key, domain, topic_id, key) for key, domain, topic_id in topic_list]

    # Qrels: 1-20 relevant documents of the topic's domain corpus.
    judgments: list[Judgment] = []
    relevant_of: list[np.ndarray] = []
    for t in topics:
        n_rel = int(rng.integers(1, 21))
        rel = start[t.domain] + rng.choice(size[t.domain], n_rel, replace=False)
        relevant_of.append(rel)
        judgments.extend(Judgment(t.key, flat[i], 1) for i in rel.tolist())

    ref_dir = out / "ref_1a"
    if ref_dir.exists():
        shutil.rmtree(ref_dir)
    manifest = {
        "subtrack": "1a",
        "benchmark": "reteco",
        "split": "bench",
        "relevance": "binary",
        "cutoffs": [10],
        "official": "ndcg_10",
        "unit": "query",
        "domains": list(DOMAINS),
    }
    doc_index = DocIdIndex.from_pairs(((d, i) for d in DOMAINS for i in corpus[d]), list(DOMAINS))
    del corpus
    Reference(manifest, topics, judgments, doc_index).write(ref_dir)
    del doc_index, judgments
    reference_seconds = time.perf_counter() - started

    # The run, written in chunks of topics; each line built by Arrow, the file is its bytes.
    run_path = out / "run.txt"
    depth = docs_per_topic
    anomalies = {"duplicates": {}, "unknown": {}}
    keys = pa.array([t.key for t in topics], pa.string())
    rank_text = pc.cast(pa.array(np.arange(1, depth + 1)), pa.string())
    chunk = max(1, 1_000_000 // depth)
    # "shuffled": each topic's lines together, topics in an order unrelated to the reference's
    # (a separate generator, so that the default data stays the same).
    written = np.arange(len(topics))
    if topic_order == "shuffled":
        written = np.random.default_rng(seed + 1).permutation(len(topics))
    with open(run_path, "wb") as sink:
        for first in range(0, len(topics), chunk):
            block = written[first : first + chunk]
            docs = np.empty((len(block), depth), dtype=np.int64)
            for row, ti in enumerate(block.tolist()):
                t = topics[ti]
                ranking = start[t.domain] + rng.choice(size[t.domain], depth, replace=False)
                # Some relevant documents, most of them near the top (per-topic run quality).
                quality = rng.uniform(3, 300)
                found = [r for r in relevant_of[ti].tolist() if rng.random() < 0.6]
                if found:
                    where = np.minimum(rng.exponential(quality, len(found)).astype(np.int64), depth - 1)
                    where, first_at = np.unique(where, return_index=True)
                    ranking[where] = np.array(found)[first_at]
                # A few unknown ids: ghosts and ids of another domain's corpus.
                if rng.random() < 0.03:
                    n_bad = int(rng.integers(1, 6))
                    at = rng.choice(depth, n_bad, replace=False)
                    for a in at.tolist():
                        if rng.random() < 0.5:
                            pool = ghost_of_domain[t.domain]
                            ranking[a] = pool[int(rng.integers(len(pool)))]
                        else:
                            other = DOMAINS[
                                (DOMAINS.index(t.domain) + int(rng.integers(1, len(DOMAINS)))) % len(DOMAINS)
                            ]
                            ranking[a] = start[other] + int(rng.integers(size[other]))
                # A few repeated ids: an earlier document ranked again further down.
                if rng.random() < 0.03:
                    for _ in range(int(rng.integers(1, 4))):
                        source = int(rng.integers(0, 30))
                        ranking[int(rng.integers(source + 1, depth))] = ranking[source]
                docs[row] = ranking
                own = (ranking >= start[t.domain]) & (ranking < start[t.domain] + size[t.domain])
                if not own.all():
                    anomalies["unknown"][t.key] = int(np.count_nonzero(~own))
                repeats = depth - len(np.unique(ranking))
                if repeats:
                    anomalies["duplicates"][t.key] = repeats
            # Scores: strictly decreasing multiples of 1e-4 (no ties), from a per-topic base.
            base = rng.integers(150_000, 450_000, len(block))
            steps = rng.integers(1, 80, (len(block), depth))
            ticks = base[:, None] - np.cumsum(steps, axis=1)
            whole = pc.cast(pa.array((ticks // SCORE_TICKS).ravel()), pa.string())
            fraction = pc.utf8_lpad(pc.cast(pa.array((ticks % SCORE_TICKS).ravel()), pa.string()), 4, "0")
            score_text = pc.binary_join_element_wise(whole, fraction, ".")
            lines = pc.binary_join_element_wise(
                keys.take(pa.array(np.repeat(block, depth))),
                "Q0",
                all_ids.take(pa.array(docs.ravel())),
                pa.concat_arrays([rank_text] * len(block)),
                score_text,
                TAG + "\n",
                " ",
            )
            offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32, count=len(lines) + 1, offset=lines.offset * 4)
            sink.write(memoryview(lines.buffers()[2])[offsets[0] : offsets[-1]])
    (out / "anomalies.json").write_text(json.dumps(anomalies, indent=1, sort_keys=True) + "\n")
    return {
        "reference_seconds": round(reference_seconds, 1),
        "run_seconds": round(time.perf_counter() - started - reference_seconds, 1),
        "run_bytes": run_path.stat().st_size,
        "corpus_ids": known,
        "judgments_total": int(sum(len(r) for r in relevant_of)),
        "topics_with_unknown_ids": len(anomalies["unknown"]),
        "unknown_id_lines": sum(anomalies["unknown"].values()),
        "topics_with_duplicates": len(anomalies["duplicates"]),
        "duplicate_lines": sum(anomalies["duplicates"].values()),
    }


# --------------------------------------------------------------------------- measuring


def run_child(cmd: list[str], stdout: Path) -> tuple[float, float, int]:
    """(wall seconds, peak RSS of this child in MB, exit code)."""
    with open(stdout, "wb") as out, open(stdout.with_suffix(".stderr"), "wb") as err:
        started = time.perf_counter()
        child = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 1024, child.returncode  # ru_maxrss is in KiB on Linux


def versions() -> dict:
    from importlib.metadata import version

    with open("/proc/meminfo") as handle:
        mem_kb = next(int(line.split()[1]) for line in handle if line.startswith("MemTotal"))
    with open("/proc/cpuinfo") as handle:
        cpu = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), "?")
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "memory_gib": round(mem_kb / 1024**2, 1),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "pyarrow": pa.__version__,
        "pytrec_eval-terrier": version("pytrec_eval-terrier"),
        "reteco": version("reteco"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description="reteco score vs plain pytrec_eval, wall time and peak memory")
    parser.add_argument("--out", type=Path, default=HERE / "out", help="scratch folder (default bench/out)")
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--docs-per-topic", type=int, default=1_000)
    parser.add_argument("--corpus", type=int, default=1_200_000, help="corpus ids over the 13 domains")
    parser.add_argument("--seed", type=int, default=2027)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--topic-order",
        choices=["reference", "shuffled"],
        default="reference",
        help="order of the topics in the run (default: the reference's; shuffled: each topic's lines together, topics shuffled)",
    )
    parser.add_argument("--regenerate", action="store_true", help="regenerate even if params.json matches")
    parser.add_argument("--clean", action="store_true", help="delete the generated data at the end")
    parser.add_argument("--reteco", default=str(Path(sys.executable).parent / "reteco"), help="console script")
    args = parser.parse_args()

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    params = {"topics": args.topics, "docs_per_topic": args.docs_per_topic, "corpus": args.corpus, "seed": args.seed, "topic_order": args.topic_order}
    params_path = out / "params.json"
    ref_dir, run_path = out / "ref_1a", out / "run.txt"
    current = json.loads(params_path.read_text()) if params_path.exists() else {}
    if args.regenerate or current.get("params") != params or not run_path.exists() or not ref_dir.exists():
        params_path.unlink(missing_ok=True)
        print(f"generating {args.topics} x {args.docs_per_topic} lines into {out} ...", flush=True)
        generated = generate(out, args.topics, args.docs_per_topic, args.corpus, args.seed, args.topic_order)
        params_path.write_text(json.dumps({"params": params, "generated": generated}, indent=1) + "\n")
        current = {"params": params, "generated": generated}
    generated = current["generated"]
    print("data:", json.dumps(generated), flush=True)
    run_path.read_bytes()  # both pipelines then read the run from the page cache

    machine = versions()
    print("machine:", json.dumps(machine), flush=True)

    commands = {
        "reteco score": lambda r: [args.reteco, "score", "--ref", str(ref_dir), "--res", str(run_path),
                                   "--out", str(out / f"reteco_r{r}")],
        "plain pytrec_eval": lambda r: [sys.executable, str(HERE / "plain_pytrec_eval.py"), "--qrels",
                                        str(ref_dir / "qrels.txt"), "--run", str(run_path),
                                        "--per-topic-out", str(out / f"plain_r{r}_topics.json")],
    }  # fmt: skip
    measured: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    plain_info = []
    for r in range(1, args.rounds + 1):
        for name, make in commands.items():
            stdout = out / f"{name.split()[0]}_r{r}.stdout"
            wall, rss, code = run_child(make(r), stdout)
            if code != 0:
                sys.stderr.write(stdout.with_suffix(".stderr").read_text())
                raise SystemExit(f"{name} exited with {code}")
            measured[name].append((wall, rss))
            if name == "plain pytrec_eval":
                plain_info.append(json.loads(stdout.read_text()))
            print(f"round {r}: {name}: {wall:.2f} s, {rss:.0f} MB", flush=True)

    # ---- the table
    median = {n: (statistics.median(w for w, _ in v), statistics.median(m for _, m in v)) for n, v in measured.items()}
    lines = [
        (
            f"{generated['run_bytes'] / 1e6:.0f} MB run, {args.topics:,} topics x {args.docs_per_topic:,} docs "
            f"({args.topics * args.docs_per_topic:,} lines), {generated['corpus_ids']:,} corpus ids"
        ),
        "",
        (
            "| pipeline | "
            + " | ".join(f"round {r} wall / peak RSS" for r in range(1, args.rounds + 1))
            + " | median wall | median peak RSS |"
        ),
        "|---|" + "---|" * args.rounds + "---|---|",
    ]
    for name, values in measured.items():
        cells = " | ".join(f"{w:.2f} s / {m:,.0f} MB" for w, m in values)
        lines.append(f"| {name} | {cells} | {median[name][0]:.2f} s | {median[name][1]:,.0f} MB |")
    (rw, rm), (pw, pm) = median["reteco score"], median["plain pytrec_eval"]
    lines += [
        "",
        (
            f"reteco / plain: wall {rw / pw:.2f}x, peak RSS {rm / pm:.2f}x "
            f"(plain pipeline: parsing {statistics.median(i['parse_seconds'] for i in plain_info):.2f} s, "
            f"pytrec_eval {statistics.median(i['evaluate_seconds'] for i in plain_info):.2f} s, medians)"
        ),
        (
            f"target (reteco wall <= 0.5 x plain and peak < 2 GB): "
            f"{'MET' if rw <= 0.5 * pw and rm < 2048 else 'MISSED'} "
            f"(wall {'ok' if rw <= 0.5 * pw else 'missed'}, memory {'ok' if rm < 2048 else 'missed'})"
        ),
    ]

    # ---- agreement of the two pipelines (last round's outputs)
    r = args.rounds
    scores = json.loads((out / f"reteco_r{r}" / "scores.json").read_text())
    details = json.loads((out / f"reteco_r{r}" / "details.json").read_text())
    plain = plain_info[-1]["means"]
    pairs = [("ndcg_10", "ndcg_cut_10"), ("map_10", "map_cut_10"), ("recall_10", "recall_10"),
             ("p_10", "P_10"), ("mrr", "recip_rank")]  # fmt: skip
    lines += ["", "| metric | reteco | plain pytrec_eval | reteco - plain |", "|---|---|---|---|"]
    for a, b in pairs:
        lines.append(f"| {a} | {scores[a]:.6f} | {plain[b]:.6f} | {scores[a] - plain[b]:+.2e} |")
    anomalies = json.loads((out / "anomalies.json").read_text())
    plain_topics = json.loads((out / f"plain_r{r}_topics.json").read_text())
    reteco_topics = {u["unit"]: u["ndcg_10"] for u in details["per_unit"]}
    differing = [k for k, v in reteco_topics.items() if abs(v - plain_topics.get(k, 0.0)) > 1e-12]
    dup, unk = set(anomalies["duplicates"]), set(anomalies["unknown"])
    by_kind = {
        "repeated ids only": [k for k in differing if k in dup and k not in unk],
        "unknown ids only": [k for k in differing if k in unk and k not in dup],
        "both": [k for k in differing if k in unk and k in dup],
        "neither (unexplained)": [k for k in differing if k not in unk and k not in dup],
    }
    lines += [
        "",
        (
            f"per-topic nDCG@10: {len(differing)} of {len(reteco_topics)} topics differ "
            f"(run: {len(unk)} topics with unknown ids, {len(dup)} with repeated ids); "
            f"topics evaluated by pytrec_eval: {plain_info[-1]['topics_evaluated']}; "
            f"reteco counts: unknown_doc_ids={details['counts']['unknown_doc_ids']}, "
            f"duplicate_doc_ids={details['counts']['duplicate_doc_ids']}"
        ),
        "",
        "| differing topics contain | topics | sum of (reteco - plain) nDCG@10 |",
        "|---|---|---|",
    ]
    for kind, keys in by_kind.items():
        delta = sum(reteco_topics[k] - plain_topics.get(k, 0.0) for k in keys)
        lines.append(f"| {kind} | {len(keys)} | {delta:+.4f} |")
    table = "\n".join(lines)
    print()
    print(table)
    (out / "results.md").write_text(table + "\n" + "\nmachine: " + json.dumps(machine) + "\n")
    results = {
        "params": params,
        "generated": generated,
        "machine": machine,
        "measured": measured,
        "plain": plain_info,
        "reteco_scores": scores,
        "differing_by_kind": {k: len(v) for k, v in by_kind.items()},
    }
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    if args.clean:
        for path in (run_path, ref_dir):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        params_path.unlink(missing_ok=True)
        print(f"deleted the generated data in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
