"""The starting kit: the BM25 + extractive baseline, the code-submission path, the samples."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO_ROOT, SHARED_SAMPLE
from support.terminal import run_on_a_terminal

from reteco.formats import release as rel
from reteco.formats.reference import Reference
from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import write_synthetic_release
from reteco.scoring.submission import score_submission, validate_submission
from reteco.workbench.codabench.bundle.input_data import write_input_data

KIT = REPO_ROOT / "starting_kit"
SUBTRACKS = ("1a", "1b", "2a", "2b", "2c")
EXPECTED = {"1a": ["run.txt"], "1b": ["run.txt"], "2a": ["run.txt"], "2b": ["answers.jsonl"], "2c": ["answers.jsonl", "run.txt"]}

pytest.importorskip("bm25s", reason="the baseline needs bm25s (pip install -e '.[baseline]')")


def _baseline():
    spec = importlib.util.spec_from_file_location("reteco_baseline", KIT / "baseline" / "reteco_baseline.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    root = tmp_path_factory.mktemp("kit")
    release = write_synthetic_release(root / "release")
    prepare_release(release, "dev", root / "ref")
    return release, root / "ref"


def test_baseline_cli_writes_valid_files_for_every_subtrack(synthetic, tmp_path):
    release, ref = synthetic
    done = subprocess.run(
        [sys.executable, str(KIT / "baseline" / "reteco_baseline.py"), "--release", str(release), "--split", "dev",
         "--out", str(tmp_path / "out")],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "BM25" not in done.stderr and "%" not in done.stderr  # no bars when stderr is not a terminal
    for sub in SUBTRACKS:
        assert sorted(p.name for p in (tmp_path / "out" / sub).iterdir()) == EXPECTED[sub]
        reference = Reference.read(ref / sub)
        validate_submission(reference, tmp_path / "out" / sub)  # raises on any error
        result = score_submission(reference, tmp_path / "out" / sub, run_judge_now=False)
        if sub != "2b":
            # BM25 finds the synthetic gold well above chance (the release is built for 0.45-0.6).
            assert result.scores["ndcg_10"] > 0.3, (sub, result.scores)
            assert result.details["counts"]["topics_missing"] == 0
        if sub in ("2b", "2c"):
            assert result.scores["rouge_l"] > 0.05
            assert result.details["answers"]["answers"] == len(reference.topics) if "answers" in result.details else True


@pytest.mark.skipif(not SHARED_SAMPLE.is_dir(), reason="the organizers' sample (../shared/data/reteco_sample) is absent")
def test_baseline_on_the_organizers_sample_layout(tmp_path):
    baseline = _baseline()
    written = baseline.run_baseline(SHARED_SAMPLE, "dev", tmp_path / "out", progress=False)
    assert len(written) == 6
    prepare_release(SHARED_SAMPLE, "dev", tmp_path / "ref")
    for sub in SUBTRACKS:
        reference = Reference.read(tmp_path / "ref" / sub)
        result = score_submission(reference, tmp_path / "out" / sub, run_judge_now=False)
        if sub != "2b":
            # The sample's corpus holds only gold passages: any sensible ranker finds them.
            assert result.scores["ndcg_10"] > 0.5, (sub, result.scores)
    # RECOR topics are written with their domain, so the sample's bare integer ids stay unambiguous.
    first = (tmp_path / "out" / "2a" / "run.txt").read_text().split("\n", 1)[0]
    assert "/" in first.split()[0]


def test_the_baseline_draws_its_bars_on_a_terminal(synthetic, tmp_path):
    release, _ = synthetic
    code, _, terminal = run_on_a_terminal(
        [sys.executable, str(KIT / "baseline" / "reteco_baseline.py"), "--release", str(release), "--split", "dev",
         "--out", str(tmp_path / "out"), "--subtracks", "1a"]
    )
    assert code == 0 and "1a BM25" in terminal and "100%" in terminal, terminal


def flatten_release(release: Path, split: str, out: Path) -> Path:
    """``release`` in the flat layout of the organizers' public sample: per track one corpus, one
    topic file and one qrels file for every domain, without split suffix; conversations carry
    their domain as "task" and keep their ids, which recur across domains ("2" in biology and in
    drones: their qrels lines are ambiguous). Two Track-1 documents without a domain prefix are
    added, cited by no query (they belong to every domain), as well as the domains' duplicate maps."""
    for track in (rel.TRACK1_DIR, rel.TRACK2_DIR):
        (out / track).mkdir(parents=True)
    t1, t2 = release / rel.TRACK1_DIR, release / rel.TRACK2_DIR
    pieces = {
        (rel.TRACK1_DIR, "documents.jsonl"): [d / "documents.jsonl" for d in rel.domain_dirs(t1).values()],
        (rel.TRACK1_DIR, "examples.jsonl"): [d / f"examples_{split}.jsonl" for d in rel.domain_dirs(t1).values()],
        (rel.TRACK1_DIR, "steps.jsonl"): [d / f"steps_{split}.jsonl" for d in rel.domain_dirs(t1).values()],
        (rel.TRACK1_DIR, "qrels.txt"): [d / f"qrels_{split}.txt" for d in rel.domain_dirs(t1).values()],
        (rel.TRACK1_DIR, "qrels_steps.txt"): [d / f"qrels_steps_{split}.txt" for d in rel.domain_dirs(t1).values()],
        (rel.TRACK2_DIR, "documents.jsonl"): [d / "documents.jsonl" for d in rel.domain_dirs(t2).values()],
        (rel.TRACK2_DIR, "qrels.txt"): [d / f"qrels_{split}.txt" for d in rel.domain_dirs(t2).values()],
    }
    for (track, name), sources in pieces.items():
        with open(out / track / name, "w", encoding="utf-8") as sink:
            for source in sources:
                text = source.read_text(encoding="utf-8")
                sink.write(text if text.endswith("\n") else text + "\n")
    with open(out / rel.TRACK1_DIR / "documents.jsonl", "a", encoding="utf-8") as sink:
        for doc_id in ("unprefixed_1.txt", "unprefixed_2.txt"):
            sink.write(json.dumps({"id": doc_id, "content": "Bitcoin blocks, laws and history in 1999."}) + "\n")
    merged = {}
    for folder in rel.domain_dirs(t1).values():
        if (folder / "duplicate_map.json").is_file():
            merged.update(json.loads((folder / "duplicate_map.json").read_text()))
    (out / rel.TRACK1_DIR / "duplicate_map.json").write_text(json.dumps(merged))
    with open(out / rel.TRACK2_DIR / "benchmark.jsonl", "w", encoding="utf-8") as sink:
        for domain, folder in rel.domain_dirs(t2).items():
            for record in json.loads((folder / f"benchmark_{split}.json").read_text(encoding="utf-8")):
                sink.write(json.dumps({**record, "task": domain}) + "\n")
    return out


def _lines_lost(run_folder: Path, ref: Path) -> tuple[int, int]:
    """(lines of the run discarded as ids unknown to the topic's domain, lines read)."""
    result = score_submission(Reference.read(ref), run_folder, run_judge_now=False)
    return result.details["counts"]["unknown_doc_ids"], result.details["counts"]["lines_read"]


@pytest.mark.parametrize("layout", ["release", "flat", "organizers_sample"])
def test_the_baselines_runs_lose_under_one_percent_of_their_lines(synthetic, tmp_path, layout):
    """The official rule: a topic is ranked against its domain's corpus. The baseline ranks there,
    in the flat layout too (the documents `reteco prepare` gives each domain), so the scorer
    discards (almost) nothing it ranks; before, one index over every domain lost 79 % of 1a's
    lines on the organizers' sample."""
    release, ref = synthetic
    if layout == "flat":
        release = flatten_release(release, "dev", tmp_path / "flat")
    elif layout == "organizers_sample":
        if not SHARED_SAMPLE.is_dir():
            pytest.skip(f"the organizers' sample is not at {SHARED_SAMPLE} (expected beside the repository, in ../shared)")
        release = SHARED_SAMPLE
    if layout != "release":
        ref = tmp_path / "ref"
        prepare_release(release, "dev", ref)
    _baseline().run_baseline(release, "dev", tmp_path / "out", ("1a", "1b", "2a", "2c"), progress=False)
    for sub in ("1a", "1b", "2a", "2c"):
        lost, read = _lines_lost(tmp_path / "out" / sub, ref / sub)
        assert read > 0 and lost < 0.01 * read, (layout, sub, lost, read)
        if layout == "flat":
            # BM25 still finds the synthetic gold in its domain's share of the flat corpus.
            assert score_submission(Reference.read(ref / sub), tmp_path / "out" / sub, run_judge_now=False).scores[
                "ndcg_10"] > 0.3


def test_extractive_answer_picks_the_sentences_sharing_the_question_words():
    baseline = _baseline()
    passages = [
        "Bitcoin blocks are mined every ten minutes. The halving in 2024 cut the reward.",
        "Unrelated text about gardening. The reward halving happens every 210000 blocks!",
    ]
    answer = baseline.extractive_answer("When did the reward halving happen?", passages, max_words=30)
    assert answer == "The halving in 2024 cut the reward. The reward halving happens every 210000 blocks!"
    assert baseline.extractive_answer("anything", [], 10)  # never empty: empty answers are errors
    assert baseline.extractive_answer("zzz", ["One. Two."], 10) == "One."
    assert len(baseline.extractive_answer("a b", ["word " * 500], 20).split()) == 20


def test_input_data_holds_no_labels(synthetic, tmp_path):
    release, _ = synthetic
    for sub in ("1a", "2a", "2b"):
        folder = write_input_data(release, "dev", sub, tmp_path / sub)
        assert json.loads((folder / "task.json").read_text()) == {"format": "reteco-input/1", "subtrack": sub, "split": "dev"}
        names = [p.name for p in folder.rglob("*") if p.is_file()]
        assert not any(n.startswith(("qrels", "guidance")) for n in names)
        assert not any(n.endswith(("_train.jsonl", "_test.jsonl", "_train.json", "_test.json")) for n in names)
        text = "".join(p.read_text() for p in folder.rglob("*.json*") if "documents" not in p.name)
        assert '"gold_answers"' not in text and '"answer"' not in text
        assert ('"gold_ids"' in text) is False
        assert ('"gold_doc_ids"' in text) is (sub == "2b")  # 2b's input: the gold passages


def _ingest(submission: Path, input_dir: Path, output: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO_ROOT / "ingestion_program" / "ingestion.py"), str(input_dir), str(output), str(submission)],
        capture_output=True, text=True, check=False,
    )


@pytest.mark.parametrize("subtrack", ["1b", "2c"])
def test_code_submission_runs_through_the_ingestion_program_and_scores(synthetic, tmp_path, subtrack):
    release, ref = synthetic
    submission = tmp_path / "submission"
    shutil.copytree(KIT / "code_submission", submission)
    shutil.copy(KIT / "baseline" / "reteco_baseline.py", submission)
    input_dir = write_input_data(release, "dev", subtrack, tmp_path / "input")
    done = _ingest(submission, input_dir, tmp_path / "output")
    assert done.returncode == 0, done.stderr
    result = score_submission(Reference.read(ref / subtrack), tmp_path / "output" / subtrack, run_judge_now=False)
    assert result.scores["ndcg_10"] > 0.3


def test_ingestion_passes_a_results_submission_through_and_reports_a_broken_one(synthetic, tmp_path):
    release, _ = synthetic
    input_dir = write_input_data(release, "dev", "2a", tmp_path / "input")
    results = tmp_path / "results"
    shutil.copytree(KIT / "sample_submissions" / "2a", results)
    done = _ingest(results, input_dir, tmp_path / "out1")
    assert done.returncode == 0 and (tmp_path / "out1" / "run.txt").read_bytes() == (results / "run.txt").read_bytes()

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "submission.py").write_text("def run(input_dir, output_dir, subtrack, split):\n    raise RuntimeError('boom')\n")
    done = _ingest(broken, input_dir, tmp_path / "out2")
    assert done.returncode == 1 and "boom" in done.stderr and "run() failed" in done.stderr

    silent = tmp_path / "silent"
    silent.mkdir()
    (silent / "submission.py").write_text("def run(input_dir, output_dir, subtrack, split):\n    pass\n")
    done = _ingest(silent, input_dir, tmp_path / "out3")
    assert done.returncode == 1 and "wrote no run.txt" in done.stderr


def test_starting_kit_readme_documents_formats_walkthrough_and_local_scoring():
    text = (KIT / "README.md").read_text()
    for needle in ("reteco validate", "reteco score", "reteco_baseline.py", "score.py", "submission.py",
                   "answers.jsonl", "run.txt", "metadata.yaml"):
        assert needle in text, needle


def _kit_sections(text: str) -> dict[str, str]:
    """The README's ``## <number> ...`` sections by number ("4.", "5.", ...)."""
    parts = re.split(r"^## ", text, flags=re.M)[1:]
    return {part.split(" ", 1)[0]: part for part in parts}


def test_the_kit_readme_names_only_pages_and_sections_of_the_competition():
    # The kit travels alone (starting_kit.zip): it points at the competition's pages by title,
    # and at a section by its heading, which must exist where the page's text is kept.
    from reteco.workbench.codabench.bundle import competition

    text = " ".join((KIT / "README.md").read_text(encoding="utf-8").split())
    sources = {title: REPO_ROOT / path for title, path in competition.PAGES}
    named = [title for group in re.findall(r'((?:"[^"]+"(?:,? and |, )?)+) pages?\b', text)
             for title in re.findall(r'"([^"]+)"', group)]
    assert named and set(named) <= set(sources), named
    for title, section in re.findall(r'"([^"]+)" page, "([^"]+)"', text):
        headings = re.findall(r"^#+ (.*?)\s*$", sources[title].read_text(encoding="utf-8"), flags=re.M)
        assert section in headings, (title, section)


def test_the_kit_readme_says_the_judge_can_run_on_the_platform_and_points_at_when():
    # The scoring program judges 2b/2c in the phases the organizers choose (docs/codabench_judge.md):
    # a kit saying it never does would tell participants the judge columns stay empty at submission.
    sections = _kit_sections((KIT / "README.md").read_text(encoding="utf-8"))
    for number in ("4.", "5."):
        prose = " ".join(sections[number].split())
        assert not re.search(r"judge (?:never|does not|doesn't) run|columns[^.]* stay empty until", prose), number
    prose = " ".join((sections["4."] + sections["5."]).split())
    assert '"Judge and audit" page, "When the judge runs"' in prose
    assert "phases the organizers chose" in prose
