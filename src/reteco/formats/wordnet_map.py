"""WordNet's prepared map for METEOR: what nltk's ``meteor_score`` asks of WordNet, in one SQLite file.

nltk's METEOR (``nltk.translate.meteor_score``, its synonym stage ``_enum_wordnetsyn_match``)
makes one kind of WordNet call: ``wordnet.synsets(word)``, then ``lemma.name()`` of every
``synset.lemmas()``. nltk's ``WordNetCorpusReader`` answers it only after parsing WordNet's text
index (about 5 s on 2 quiet cores, 36 s under load), in every scoring process. This module writes,
once at install time (``reteco setup-wordnet``), the tables that answer the same call and reads
them in a few milliseconds: ``reteco-wordnet-map.sqlite`` beside the WordNet files.

``synsets(word)`` is nltk's (3.9-3.10, ``WordNetCorpusReader.synsets`` with ``_morphy``): the word
lower-cased; for each part of speech in nltk's order (noun, verb, adjective, adverb), the word's
base forms: the exception list's forms when the word is listed there (``<pos>.exc``: the first
word of a line, the rest its bases; a later line wins), else the word with each of the part of
speech's suffix rules applied once (``SUBSTITUTIONS``); of the word itself and those forms, the
ones the part of speech's index lists, each once, in that order; for each such form its synsets
in the index's order. The adjective index's synsets include the satellites (nltk reads them in
``data.adj`` too). A synset's lemma names are the data line's words, in order, without an
adjective's syntactic marker (``(a)``, ``(p)``, ``(ip)``).

Tables: ``lemmas(lemma, pos, synsets)``: every index line (``pos`` as the line gives it;
``synsets`` the ids of its offsets, space-separated, in the line's order); ``synsets(id, names)``:
every synset line of the four data files, ``id`` = the data file's number (noun 1, verb 2,
adjective 3, adverb 4) x 10^8 + its byte offset, ``names`` space-separated (WordNet's names hold
no blank); ``exceptions(pos, form, bases)``; ``meta``: the map's format, the WordNet version
(read from ``data.adj``'s licence lines as nltk's ``get_version`` does), and the sha256 and size
of every file it was built from. ``open_map`` refuses a map of another format, or one whose
files' hashes differ from the installation's marker or whose files' sizes differ from the
files beside it (``StaleMap``, with the reason): the caller then reads the text files with nltk.
Tests compare the answers with nltk's own reader (tests/formats/test_wordnet_map.py).
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import tempfile
from pathlib import Path

MAP_FILE = "reteco-wordnet-map.sqlite"
MAP_FORMAT = "1"

#: nltk's ``POS_LIST``: the order in which ``synsets(word)`` searches the parts of speech.
POS_ORDER = ("n", "v", "a", "r")
POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
_POS_NUMBER = {"n": 1, "v": 2, "a": 3, "r": 4}
_ID_BASE = 10**8  # above every byte offset of WordNet 3.0's data files (data.noun: 15,300,280 bytes)

#: nltk's ``MORPHOLOGICAL_SUBSTITUTIONS`` (``WordNetCorpusReader``), in its order.
SUBSTITUTIONS = {
    "n": (("s", ""), ("ses", "s"), ("ves", "f"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
          ("men", "man"), ("ies", "y")),
    "v": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", "")),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "r": (),
}  # fmt: skip

#: The files the map is built from.
SOURCE_FILES = tuple(f"{kind}.{POS_FILES[p]}" for kind in ("index", "data") for p in POS_ORDER) + tuple(
    f"{POS_FILES[p]}.exc" for p in POS_ORDER
)

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE lemmas(lemma TEXT NOT NULL, pos TEXT NOT NULL, synsets TEXT NOT NULL, PRIMARY KEY (lemma, pos)) WITHOUT ROWID;
CREATE TABLE synsets(id INTEGER PRIMARY KEY, names TEXT NOT NULL);
CREATE TABLE exceptions(pos TEXT NOT NULL, form TEXT NOT NULL, bases TEXT NOT NULL, PRIMARY KEY (pos, form)) WITHOUT ROWID;
"""
_MARKER = re.compile(r"(.*?)(\([^()]*\))?$")  # nltk's: a lemma name and its syntactic marker
_VERSION = re.compile(r"Word[nN]et (\d+\+?|\d+\.\d+) Copyright")  # nltk's get_version


class WordNetMapError(Exception):
    """The WordNet files cannot be turned into a map (a damaged file); the message says which."""


class StaleMap(Exception):
    """The map cannot answer for the WordNet files beside it; the message says why."""


def synset_id(pos: str, offset: int) -> int:
    return _POS_NUMBER[pos] * _ID_BASE + offset


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8").split("\n")


def _version(data_adj: bytes) -> str | None:
    for line in _lines(data_adj):
        match = _VERSION.search(line)
        if match is not None:
            return match.group(1)
    return None


def write_map(folder: Path) -> Path:
    """Build ``folder/MAP_FILE`` from the WordNet files in ``folder`` (written to a temporary file,
    then moved into place). Raises ``WordNetMapError`` on a file nltk could not read either."""
    folder = Path(folder)
    raw = {}
    for name in SOURCE_FILES:
        try:
            raw[name] = (folder / name).read_bytes()
        except OSError as exc:
            raise WordNetMapError(f"{name}: cannot be read ({exc})") from None
    synsets: dict[int, str] = {}
    for pos in POS_ORDER:
        name = f"data.{POS_FILES[pos]}"
        offset = 0
        for number, line in enumerate(_lines(raw[name]), start=1):
            if line and not line.startswith(" "):
                try:
                    columns = line.split("|", 1)[0].split()
                    count = int(columns[3], 16)
                    names = [_MARKER.match(w).group(1) for w in columns[4:4 + 2 * count:2]]
                    assert int(columns[0]) == offset and len(names) == count
                except (AssertionError, IndexError, ValueError):
                    raise WordNetMapError(f"{name}:{number}: not a synset line starting with its byte offset") from None
                synsets[synset_id(pos, offset)] = " ".join(names)
            offset += len(line.encode("utf-8")) + 1
    lemmas: dict[tuple[str, str], str] = {}
    for pos in POS_ORDER:
        name = f"index.{POS_FILES[pos]}"
        for number, line in enumerate(_lines(raw[name]), start=1):
            if not line or line.startswith(" "):
                continue
            try:
                tokens = line.split()
                n_synsets, n_pointers = int(tokens[2]), int(tokens[3])
                offsets = [int(t) for t in tokens[6 + n_pointers:6 + n_pointers + n_synsets]]
                assert n_synsets > 0 and len(offsets) == n_synsets and int(tokens[4 + n_pointers]) == n_synsets
                ids = [synset_id(pos, o) for o in offsets]
                assert all(i in synsets for i in ids)
            except (AssertionError, IndexError, ValueError):
                raise WordNetMapError(f"{name}:{number}: not an index line whose offsets are synsets of "
                                      f"data.{POS_FILES[pos]}") from None
            lemmas[tokens[0], tokens[1]] = " ".join(map(str, ids))
    exceptions: dict[tuple[str, str], str] = {}
    for pos in POS_ORDER:
        for line in _lines(raw[f"{POS_FILES[pos]}.exc"]):
            terms = line.split()
            if terms:
                exceptions[pos, terms[0]] = " ".join(terms[1:])
    meta = {"format": MAP_FORMAT, "wordnet_version": _version(raw["data.adj"]) or "unknown"}
    for name, data in raw.items():
        meta[f"sha256 {name}"] = hashlib.sha256(data).hexdigest()
        meta[f"size {name}"] = str(len(data))
    handle, staging = tempfile.mkstemp(prefix=".wordnet-map-", suffix=".sqlite", dir=folder)
    os.close(handle)
    try:
        conn = sqlite3.connect(staging)
        try:
            conn.executescript(_SCHEMA)
            with conn:
                conn.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
                conn.executemany("INSERT INTO synsets VALUES (?, ?)", sorted(synsets.items()))
                conn.executemany("INSERT INTO lemmas VALUES (?, ?, ?)",
                                 sorted((lemma, pos, ids) for (lemma, pos), ids in lemmas.items()))
                conn.executemany("INSERT INTO exceptions VALUES (?, ?, ?)",
                                 sorted((pos, form, bases) for (pos, form), bases in exceptions.items()))
            conn.execute("VACUUM")
        finally:
            conn.close()
        os.chmod(staging, 0o644)
        os.replace(staging, folder / MAP_FILE)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise
    return folder / MAP_FILE


class _Lemma:
    """A lemma as METEOR reads it: ``name()``."""

    __slots__ = ("_name",)

    def __init__(self, name: str):
        self._name = name

    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"Lemma({self._name!r})"


class _Synset:
    """A synset as METEOR reads it: ``lemmas()``; ``offset()`` is its byte offset in its data file."""

    __slots__ = ("_pos", "_offset", "_lemmas")

    def __init__(self, pos: str, offset: int, names: str):
        self._pos, self._offset = pos, offset
        self._lemmas = tuple(_Lemma(n) for n in names.split(" "))

    def lemmas(self) -> list[_Lemma]:
        return list(self._lemmas)

    def lemma_names(self) -> list[str]:
        return [lemma.name() for lemma in self._lemmas]

    def offset(self) -> int:
        return self._offset

    def __repr__(self) -> str:
        return f"Synset({self._pos}, {self._offset}, {self.lemma_names()})"


class PreparedWordNet:
    """``synsets(word)`` from a prepared map, as nltk's ``WordNetCorpusReader.synsets(word)``
    answers it (module docstring); each word's answer is kept for the process."""

    def __init__(self, path: Path, meta: dict[str, str], conn: sqlite3.Connection):
        self.path = Path(path)
        self.meta = meta
        self._conn = conn
        self._exceptions: dict[str, dict[str, list[str]]] = {p: {} for p in POS_ORDER}
        for pos, form, bases in conn.execute("SELECT pos, form, bases FROM exceptions"):
            self._exceptions[pos][form] = bases.split(" ") if bases else []
        self._answers: dict[str, list[_Synset]] = {}
        self._synsets: dict[int, _Synset] = {}

    def get_version(self) -> str:
        return self.meta["wordnet_version"]

    def close(self) -> None:
        self._conn.close()

    def _candidates(self, word: str, pos: str) -> list[str]:
        """nltk's ``_morphy`` before its filter: the word, then its exception forms or rule forms."""
        exceptions = self._exceptions[pos]
        if word in exceptions:
            return [word, *exceptions[word]]
        return [word, *(word[: -len(old)] + new for old, new in SUBSTITUTIONS[pos] if word.endswith(old))]

    def synsets(self, word: str) -> list[_Synset]:
        word = word.lower()
        answer = self._answers.get(word)
        if answer is not None:
            return list(answer)
        candidates = {pos: self._candidates(word, pos) for pos in POS_ORDER}
        forms = sorted({f for c in candidates.values() for f in c})
        listed: dict[tuple[str, str], list[int]] = {}
        for start in range(0, len(forms), 500):
            chunk = forms[start:start + 500]
            query = f"SELECT lemma, pos, synsets FROM lemmas WHERE lemma IN ({','.join('?' * len(chunk))})"
            for lemma, pos, ids in self._conn.execute(query, chunk):
                listed[lemma, pos] = [int(i) for i in ids.split(" ")]
        ids: list[tuple[str, int]] = []
        for pos in POS_ORDER:
            seen: set[str] = set()
            for form in candidates[pos]:
                if (form, pos) in listed and form not in seen:
                    seen.add(form)
                    ids.extend((pos, i) for i in listed[form, pos])
        missing = sorted({i for _, i in ids if i not in self._synsets})
        for start in range(0, len(missing), 500):
            chunk = missing[start:start + 500]
            query = f"SELECT id, names FROM synsets WHERE id IN ({','.join('?' * len(chunk))})"
            for i, names in self._conn.execute(query, chunk):
                self._synsets[i] = _Synset(POS_ORDER[i // _ID_BASE - 1], i % _ID_BASE, names)
        answer = [self._synsets[i] for _, i in ids]
        self._answers[word] = answer
        return list(answer)


def open_map(folder: Path, recorded: dict[str, str]) -> PreparedWordNet:
    """The map in ``folder``, checked against ``recorded`` (the installation marker's sha256 per
    file) and the sizes of the files beside it; ``StaleMap`` says why it cannot be used."""
    path = Path(folder) / MAP_FILE
    if not path.is_file():
        raise StaleMap(f"there is no prepared map ({MAP_FILE})")
    conn = None
    try:
        # Read-only and immutable: no lock, no journal, a bundle's read-only folder is fine.
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True, check_same_thread=False)
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.Error as exc:
        if conn is not None:
            conn.close()
        raise StaleMap(f"its prepared map ({MAP_FILE}) cannot be read ({exc})") from None
    problem = None
    if meta.get("format") != MAP_FORMAT:
        problem = f"its prepared map ({MAP_FILE}) has format {meta.get('format')}, this reteco reads format {MAP_FORMAT}"
    else:
        for name in SOURCE_FILES:
            try:
                size = (Path(folder) / name).stat().st_size
            except OSError:
                size = None
            if recorded.get(name) != meta.get(f"sha256 {name}") or str(size) != meta.get(f"size {name}"):
                problem = f"its prepared map ({MAP_FILE}) was built from other files than the installed {name}"
                break
    if problem is not None:
        conn.close()
        raise StaleMap(problem)
    try:
        return PreparedWordNet(path, meta, conn)
    except sqlite3.Error as exc:
        conn.close()
        raise StaleMap(f"its prepared map ({MAP_FILE}) cannot be read ({exc})") from None
