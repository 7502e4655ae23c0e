"""A participant's submission, whatever its container, read safely.

Why one module: one reader for every container a submission comes in (zip, folder,
single or gzipped file, standard input). The safety rules below (the cap enforced while reading,
the path and link checks, the entries ignored, the messages) must hold alike for every
container, and the private guards that enforce them (``_read_capped``, ``_Guarded``,
``_ignore_reason``, ``_finish``) serve all the containers, and the organizers' bulk download of
many submissions (``open_archive``) is read with the same guards rather than a second reader.

``open_submission(path)`` accepts what participants and Codabench actually hand us:

- a ``.zip`` file (recognised by its name or by its ``PK`` magic bytes);
- a folder, e.g. Codabench's ``/app/input/res``: the worker extracts the participant's zip there
  as is (a top-level folder is not stripped), adds a ``metadata`` file beside it, and often
  ``__MACOSX/`` comes along; a folder whose only file is a zip is opened as that zip;
- a single plain file, or a single gzipped file;
- standard input, given as ``-`` (or as a path that is this process's standard input, such as
  ``/dev/stdin``): read once, up to ``max_bytes``, then taken as a single file whose kind is told
  by its content (a zip, a gzipped file, or plain text), labelled ``stdin`` in messages. A
  pipe is read once only, so nothing may look at its first bytes before it is read whole.

Any other path that is not a regular file or a folder (a named pipe, a device, a socket) is
refused at once: reading it could block forever or never end.

Any member may be gzipped: gzip is recognised by its magic bytes ``1f 8b``, not only by a
``.gz`` name, and ``read_bytes`` returns the decompressed content.

Entries that are never candidates, but are listed in ``Submission.ignored``: anything under
``__MACOSX/``, AppleDouble ``._*`` files, ``.DS_Store``, ``Thumbs.db``, hidden files and
folders (leading dot), and Codabench's ``metadata`` file. Directory entries are skipped without
being listed (they hold no content). If all remaining files share one top-level folder, it is
stripped from their names (repeatedly, so ``a/b/run.txt`` alone becomes ``run.txt``).

Safety:

- zips are never extracted as files of their own names; members are read with ``ZipFile.open``. A member whose
  path is absolute, has a drive letter, or has a ``..`` part (with ``/`` or ``\\`` separators)
  is refused, as are duplicate names and encrypted members;
- in a folder, a symbolic link that points outside the folder is refused;
- ``max_bytes`` (``DEFAULT_MAX_BYTES`` = 2 GiB, the documented limit) caps the decompressed
  bytes read over all members. Declared sizes are never trusted: the cap is enforced while
  reading, so a zip bomb or gzip bomb stops at the cap. Declared sizes summing over the cap
  are also refused up front, before anything is decompressed;
- a corrupt zip, corrupt gzip data or an encrypted member raises ``InputError`` with a message
  for the participant, never a traceback.

``open_archive`` opens a zip of many submissions (an organizer's bulk download) with the same
checks, except that an unsafe or repeated entry is listed as refused instead of refusing the
whole zip; ``Submission.copy_stored`` copies one of its members, as stored, under a per-member cap.

Memory: ``read_bytes`` holds one member at a time, built in a growing buffer whose bytes are
handed over without a final copy, so reading a member needs about its size (at most ~2x) plus
1 MiB; answers are read this way. Runs go through ``read_buffer``, which maps the bytes
instead: a plain file as it is, anything compressed decompressed once (1 MiB at a time, under
the cap) into an anonymous temporary file that is then mapped, so only the pages the run
reader touches are resident (a 2 GiB gzip bomb refused at its first lines costs megabytes,
not 2 GiB: ``bench/bench_refusal.py``).

Participants' own file names may appear in messages: they are not reference data. They are
quoted with ``reteco.problems.quoted`` (cut at 80 characters, control characters escaped), as
is the text of a library's exception, which may quote a member's name.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import io
import mmap
import os
import re
import stat
import struct
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Iterator

from reteco.problems import InputError, printable, quoted
from reteco.subtracks import SUBTRACK_IDS

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_ENTRIES",
    "RUN_FILE_NAMES",
    "Submission",
    "open_submission",
]

#: The documented limit on a submission's size once decompressed: 2 GiB.
DEFAULT_MAX_BYTES = 2 * 1024**3

#: A submission is a few files; a container listing more entries than this is refused before
#: any work is done per entry (a zip with millions of empty entries is a cheap attack too).
MAX_ENTRIES = 10_000

#: When several files could be the run, the one with one of these base names (ignoring case
#: and a trailing ``.gz``) is the run.
RUN_FILE_NAMES = ("run", "run.txt", "run.trec", "run.tsv")

KINDS = ("run", "answers")

# Read in bounded chunks so a bomb is stopped after at most the cap plus one byte.
_CHUNK = 1024 * 1024
_GZIP_MAGIC = b"\x1f\x8b"
# A local file header, or the end-of-central-directory record that starts an empty zip.
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
# Label of a folder submission in messages: Codabench's folder name (``res``) means nothing to
# a participant.
_FOLDER_LABEL = "submission"
#: The path that means standard input, and its label (and file name) in messages.
STDIN = "-"
STDIN_LABEL = "stdin"
# How many names a message lists before saying how many more there are.
_LISTED_NAMES = 20
_DRIVE = re.compile(r"^[A-Za-z]:")

# What reading a damaged zip or gzip stream can raise, from zipfile, zlib, gzip and struct.
_READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, struct.error, NotImplementedError)


def _human(n: int) -> str:
    """A size for people: ``2 GiB``, ``1.5 MiB``, ``300 bytes``."""
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size:
            return f"{n / size:.1f}".removesuffix(".0") + f" {unit}"
    return f"{n} bytes"


def _limit_text(max_bytes: int) -> str:
    return f"{max_bytes} bytes ({_human(max_bytes)})" if max_bytes >= 1024 else f"{max_bytes} bytes"


# Said with every size refusal, so the participant knows how to get under the limit.
_HOW_TO_FIT = (
    "to fit under it, submit only the files the task asks for (run file, and answers file where "
    "required) with no more results per topic than the task asks for; a gzipped file counts "
    "at its decompressed size"
)


def _list_names(names: list[str]) -> str:
    shown = ", ".join(quoted(name) for name in names[:_LISTED_NAMES])
    more = len(names) - _LISTED_NAMES
    return shown + (f" and {more} more" if more > 0 else "")


def _strip_gz(name: str) -> str:
    return name[:-3] if name.lower().endswith(".gz") else name


def _ignore_reason(parts: tuple[str, ...]) -> str | None:
    """Why an entry (given as path parts) is not a candidate, or None if it is one."""
    if "__MACOSX" in parts:
        return "macOS resource fork folder"
    base = parts[-1]
    if base.startswith("._"):
        return "AppleDouble file"
    if base == ".DS_Store":
        return "macOS folder settings"
    if base.lower() == "thumbs.db":
        return "Windows thumbnail cache"
    if any(part.startswith(".") for part in parts):
        return "hidden file"
    if base == "metadata":
        # Codabench's worker writes it beside the extracted submission.
        return "Codabench metadata"
    return None


@dataclass(frozen=True)
class _Member:
    """One candidate file of the submission."""

    name: str  # relative, "/"-separated, common top folder stripped: the key callers use
    original: str  # the path inside its container as the participant wrote it
    declared: int  # size the container claims (zip header, or file size on disk); a hint only
    path: Path | None = None  # folder and single-file members
    info: zipfile.ZipInfo | None = None  # zip members
    data: bytes | None = None  # the one file read from standard input


class _ContainerError(Exception):
    """A failure of the container (zip or file) below the gzip layer, kept apart so the message
    can say which layer is damaged."""

    def __init__(self, cause: BaseException):
        super().__init__(str(cause))
        self.cause = cause


class _Guarded(io.RawIOBase):
    """Wraps a member's raw stream so that its errors come out as ``_ContainerError``, even
    when they surface inside the gzip decoder that reads from it."""

    def __init__(self, stream: BinaryIO):
        super().__init__()
        self._stream = stream

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        try:
            return self._stream.read(size)
        except _READ_ERRORS as exc:
            raise _ContainerError(exc) from exc

    def readinto(self, buffer) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def peek(self, size: int) -> bytes:
        try:
            return self._stream.peek(size)  # type: ignore[attr-defined]
        except _READ_ERRORS as exc:
            raise _ContainerError(exc) from exc


class _TooLarge(Exception):
    pass


class _InMemory(io.BytesIO):
    """Bytes already read (standard input's) as a file that can ``peek``, like an open file.

    ``io.BytesIO`` shares the bytes until written to, and ``read`` of everything from the start
    hands back the same object: no copy of a 2 GiB run."""

    def __init__(self, data: bytes):
        super().__init__(data)
        self._data = data

    def peek(self, size: int = 1) -> bytes:
        position = self.tell()
        return self._data[position : position + max(size, 1)]


def _zip_source(source: Path | bytes):
    """What ``zipfile.ZipFile`` opens: a zip's path, or its bytes as a file."""
    return io.BytesIO(source) if isinstance(source, bytes) else source


def _read_capped(stream, limit: int, expected: int | None = None) -> bytes:
    """All of ``stream``, or ``_TooLarge`` as soon as more than ``limit`` bytes come out.

    Never asks for more than one byte past the limit, so a bomb costs at most the limit in
    memory and time. When the stored size is known (``expected``: a plain file's size on
    disk), one read of that size plus one byte
    returns everything in a single allocation; if more comes than declared, reading goes on
    under the cap. Otherwise the BytesIO buffer grows in place and ``getvalue`` hands over its
    bytes without copying when nothing else holds it, so the peak stays near one copy.
    """
    buffer = io.BytesIO()
    total = 0
    if expected is not None and expected <= limit:
        first = stream.read(expected + 1)
        more = stream.read(1) if len(first) <= expected else b""
        if len(first) <= expected and not more:
            return first
        first += more
        total = len(first)
        if total > limit:
            raise _TooLarge
        buffer.write(first)
        del first
    _copy_capped(stream, limit - total, buffer)
    return buffer.getvalue()


class _SpoolError(Exception):
    """Writing the decompressed bytes to the temporary file failed (a full disk): not the
    participant's data, so it must not surface as "not valid gzip data"."""


def _copy_capped(stream, limit: int, sink: BinaryIO) -> int:
    """Copy all of ``stream`` into ``sink`` chunk by chunk; the count, or ``_TooLarge`` as soon
    as more than ``limit`` bytes come out (never asking for more than one byte past it).

    ``sink`` is ``_read_capped``'s in-memory buffer, or ``read_buffer``'s temporary file: there
    the bytes go to a file, not to memory, so decompressing a 2 GiB gzip bomb costs one chunk
    of memory, and the run reader maps only the pages it reads. A failed write (a full disk)
    is ``_SpoolError``, never taken for damaged data.
    """
    total = 0
    while True:
        # Always ask for at least one byte: read(0) would look like the end, read(-n) reads all.
        chunk = stream.read(min(_CHUNK, max(limit - total, 0) + 1))
        if not chunk:
            return total
        total += len(chunk)
        if total > limit:
            raise _TooLarge
        try:
            sink.write(chunk)
        except OSError as exc:
            raise _SpoolError(exc) from None
        del chunk  # drop the chunk before the next read allocates another


class Submission:
    """The files of one submission, read on demand; see the module docstring.

    ``files`` lists the candidate members (relative, "/"-separated, common top folder
    stripped); ``ignored`` lists what was skipped, as display names; ``label`` names the
    submission as a whole in messages (the zip's name, the file's name, or ``submission`` for
    a folder).
    """

    def __init__(
        self,
        label: str,
        members: list[_Member],
        ignored: list[str],
        max_bytes: int,
        *,
        zip_path: Path | bytes | None = None,
    ):
        self.label = label
        self.ignored = ignored
        self.max_bytes = max_bytes
        self._members = {m.name: m for m in sorted(members, key=lambda m: m.name)}
        self._zip_path = zip_path
        # Standard input's one plain file has no name to tell its kind: it is whichever kind is
        # asked for first (see ``find``).
        self._stdin_kind: str | None = None
        # Decompressed bytes read per member: the cap is on the total over distinct members,
        # so reading the same member twice does not count twice.
        self._read: dict[str, int] = {}
        # Members decompressed into anonymous temporary files by ``read_buffer`` (kept open, so
        # that reading a member again maps it again instead of decompressing it twice).
        self._spooled: dict[str, BinaryIO] = {}

    def __repr__(self) -> str:
        return f"Submission({self.label!r}, files={self.files!r})"

    @property
    def files(self) -> list[str]:
        return list(self._members)

    def unscored(self, used: list[str]) -> list[str]:
        """Warnings about files that scoring does not read (issue 35): files beside the ``used``
        ones that are not documentation (a second run file beside run.txt, a metadata.yaml), and a
        file named ``metadata`` inside a zip (Codabench's reserved name, which the pages say never
        to include in a results submission; the worker's own, beside an extracted folder, is not
        the participant's and is not mentioned)."""
        out = []
        others = [n for n in self.files if n not in used and not _is_docs(n)]
        if others:
            out.append(f"{len(others)} files of the submission are not scored: {_list_names([self.display_name(n) for n in others])}; "
                       f"scoring reads {_list_names([self.display_name(n) for n in used])} only: remove the others")
        reserved = [i for i in self.ignored if ":" in i and PurePosixPath(i.split(":", 1)[1]).name == "metadata"]
        if reserved:
            out.append(f"the zip holds a file named metadata ({_list_names(reserved)}), a name Codabench reserves: "
                       "never include it in a results submission; remove it")
        return out

    def for_subtrack(self, subtrack: str) -> "Submission":
        """The part of the submission for ``subtrack``: its own folder when the submission holds
        folders named like sub-tracks (``1a/run.txt``, ``2c/answers.jsonl`` ..., as the starting
        kit zips all of them at once), else the whole submission. Files outside that folder are
        listed as ignored. A submission with folders of other sub-tracks but none of this one is
        an InputError naming them, never an attempt to score the wrong files."""
        folders: dict[str, list[str]] = {}
        for name in self._members:
            first, _, rest = name.partition("/")
            if rest and first.lower() in SUBTRACK_IDS:
                folders.setdefault(first.lower(), []).append(name)
        if not folders:
            return self
        if subtrack not in folders:
            names = ", ".join(f"{folder}/" for folder in sorted(folders))
            raise InputError(
                f"the submission holds the sub-track folders {names} but none named {subtrack}/; it is scored "
                f"for sub-track {subtrack}: put that sub-track's files at the top of the zip or in a {subtrack}/ folder",
                self.label,
            )
        chosen = set(folders[subtrack])
        members = [
            dataclasses.replace(m, name=m.name.partition("/")[2]) for name, m in self._members.items() if name in chosen
        ]
        ignored = self.ignored + [f"{self.display_name(n)} (not in {subtrack}/)" for n in self._members if n not in chosen]
        return Submission(self.label, _strip_top_folders(members), ignored, self.max_bytes, zip_path=self._zip_path)

    def display_name(self, name: str) -> str:
        """The name to use in messages: ``run.txt`` (folder or single file) or
        ``submission.zip:sub/run.txt`` (the path the participant wrote inside the zip)."""
        member = self._members[name]
        return f"{self.label}:{member.original}" if member.info is not None else member.original

    def find(self, kind: str) -> str:
        """The member holding ``kind`` ("run" or "answers"); ``InputError`` if none or ambiguous.

        answers: exactly one member ending in ``.jsonl`` or ``.jsonl.gz``.
        run: the members that are neither answers-like (``.jsonl``, ``.json``, gzipped or not)
        nor documentation (README*, ``.md``, ``.pdf``); if several, the one named as in
        ``RUN_FILE_NAMES`` (``run.txt``...).
        """
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
        names = self.files
        if len(names) == 1 and self._members[names[0]].data is not None:
            return self._stdin_file(names[0], kind)
        if kind == "answers":
            found = [n for n in names if _strip_gz(n).lower().endswith(".jsonl")]
            if len(found) == 1:
                return found[0]
            if not found:
                raise InputError(
                    "no answers file found: the answers must be one .jsonl (or .jsonl.gz) file; "
                    f"files in the submission: {_list_names(names)}",
                    self.label,
                )
            raise InputError(
                f"{len(found)} answers files (.jsonl): {_list_names(found)}; keep exactly one", self.label
            )

        found = [n for n in names if not _is_answers_or_docs(n)]
        if len(found) == 1:
            return found[0]
        if not found:
            raise InputError(
                f"no run file found; files in the submission: {_list_names(names)}; "
                "add the run file, named run.txt",
                self.label,
            )
        preferred = [n for n in found if _strip_gz(PurePosixPath(n).name).lower() in RUN_FILE_NAMES]
        if len(preferred) == 1:
            return preferred[0]
        raise InputError(
            f"{len(found)} files could be the run: {_list_names(found)}; "
            "name the run file run.txt (and remove the other run files)",
            self.label,
        )

    def _stdin_file(self, name: str, kind: str) -> str:
        """Standard input's one plain file, as the first kind asked for: it holds a run or
        answers, and 2c, which asks for both, needs a zip."""
        if self._stdin_kind not in (None, kind):
            raise InputError(
                f"standard input holds a single file, read as the {self._stdin_kind}; the {kind} must be in "
                "the submission too: pipe in a zip holding both files, or give the path of a zip or folder",
                self.label,
            )
        self._stdin_kind = kind
        return name

    def read_buffer(self, name: str) -> bytes | memoryview:
        """Like ``read_bytes``, but the content comes back memory-mapped: a plain (not gzipped)
        file on disk is mapped as it is (no copy, no allocation, and the page cache serves a
        600 MB run at once); standard input's plain bytes, already in memory, are returned as
        they are (``read_bytes``: no copy); anything else (a zip member, gzip) is decompressed
        under the cap into an anonymous temporary file, once, and that file is mapped. Only the
        pages a reader touches are then resident: refusing a 2 GiB gzip bomb costs one chunk of
        memory, and a valid gzipped run costs what the same run uncompressed does. Where no
        temporary file can be written (no space), it falls back to ``read_bytes``."""
        member = self._members[name]
        spool = self._spooled.get(name)
        if member.data is not None and member.data[:2] != _GZIP_MAGIC:
            # Held whole since standard input was read: spooling it would write a second copy.
            return self.read_bytes(name)
        if spool is None and member.info is None and member.path is not None:
            try:
                with open(member.path, "rb") as handle:
                    size = os.fstat(handle.fileno()).st_size
                    gzipped = handle.read(2) == _GZIP_MAGIC or name.lower().endswith(".gz")
                    others = sum(n for key, n in self._read.items() if key != name)
                    if not gzipped and 0 < size <= self.max_bytes - others:
                        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
                        self._read[name] = size
                        return memoryview(mapped)
            except (OSError, ValueError):
                return self.read_bytes(name)  # it reports any problem with the file in its own words
            if not gzipped:
                return self.read_bytes(name)  # empty, or over the cap: read_bytes says which
        if spool is None:
            try:
                spool = tempfile.TemporaryFile(prefix="reteco-submission-")
            except OSError:
                return self.read_bytes(name)
            try:
                self._decode(name, lambda stream, limit, _gzipped: _copy_capped(stream, limit, spool))
                spool.flush()
            except _SpoolError:
                spool.close()
                self._read.pop(name, None)
                return self.read_bytes(name)
            except BaseException:
                spool.close()
                raise
            self._spooled[name] = spool
        if self._read.get(name, 0) == 0:
            return b""  # mmap cannot map an empty file
        return memoryview(mmap.mmap(spool.fileno(), 0, access=mmap.ACCESS_READ))

    def read_bytes(self, name: str) -> bytes:
        """The content of member ``name``, decompressed if gzipped.

        The cap (``max_bytes`` over all members read) is enforced while decompressing; over it,
        or on damaged data, ``InputError`` names the member.
        """
        member = self._members[name]

        def read(stream, limit: int, gzipped: bool) -> bytes:
            # A file on disk reads its declared size in one allocation; a zip member's read(n)
            # joins decompressed pieces (two copies), so it goes chunk by chunk.
            expected = member.declared if member.info is None and not gzipped else None
            return _read_capped(stream, limit, expected)

        return self._decode(name, read)

    def copy_stored(self, name: str, sink: BinaryIO, *, limit: int, advice: str) -> int:
        """Copy member ``name`` into ``sink`` as stored (a gzipped member stays gzipped: it is a
        file to be opened later, e.g. a submission inside an organizer's bulk download), chunk by
        chunk; returns its size. Over ``limit`` bytes (or the total cap), damaged, or encrypted:
        ``InputError`` naming the member, with ``advice`` after a size refusal. The zip's CRC is
        checked as the last chunk is read."""
        return self._decode(
            name, lambda stream, left, _gzipped: _copy_capped(stream, left, sink),
            gunzip=False, member_limit=limit, advice=advice,
        )

    def _decode(self, name: str, consume, *, gunzip: bool = True, member_limit: int | None = None,
                advice: str = _HOW_TO_FIT):
        """Open member ``name``, decompress it if gzipped (and ``gunzip``), and hand the stream to
        ``consume(stream, limit, gzipped)`` (``limit``: the bytes left under the cap, and under
        ``member_limit`` if given), which returns the bytes or their count; every failure
        becomes the ``InputError`` the participant reads."""
        member = self._members[name]
        display = self.display_name(name)
        others = sum(size for key, size in self._read.items() if key != name)
        limit = self.max_bytes - others
        per_member = member_limit is not None and member_limit < limit
        if per_member:
            limit = member_limit  # type: ignore[assignment]
        try:
            with self._open_raw(member, display) as raw:
                stream = _Guarded(raw)
                if not gunzip:
                    return self._count(name, consume(stream, limit, False))
                gzipped = stream.peek(2)[:2] == _GZIP_MAGIC
                if not gzipped and name.lower().endswith(".gz"):
                    raise InputError(
                        "named .gz but not gzip data; compress it with gzip, or drop the .gz from its name",
                        display,
                    )
                if gzipped:
                    with gzip.GzipFile(fileobj=stream, mode="rb") as unzipped:
                        data = consume(unzipped, limit, True)
                else:
                    data = consume(stream, limit, False)
        except _TooLarge:
            if per_member:
                message = f"larger than the limit of {_limit_text(limit)} per file"
            elif others == 0:
                message = f"larger than the limit of {_limit_text(self.max_bytes)} once decompressed"
            else:
                before = _list_names([self.display_name(k) for k in self._read if k != name])
                message = (
                    f"with the files read before it ({before}), the submission is over the limit "
                    f"of {_limit_text(self.max_bytes)} once decompressed"
                )
            raise InputError(f"{message}; {advice}", display) from None
        except _ContainerError as exc:
            if member.info is not None:
                message = f"cannot be read from the zip ({printable(str(exc))}); the zip is damaged, create it again"
            else:
                message = f"cannot be read ({printable(str(exc))})"
            raise InputError(message, display) from None
        except (gzip.BadGzipFile, zlib.error, EOFError, OSError) as exc:
            raise InputError(
                f"not valid gzip data ({printable(str(exc))}); compress it again with gzip, or submit it uncompressed",
                display,
            ) from None
        return self._count(name, data)

    def _count(self, name: str, data):
        """Record what reading member ``name`` gave (its bytes or their count) against the cap."""
        self._read[name] = data if isinstance(data, int) else len(data)
        return data

    @contextlib.contextmanager
    def _open_raw(self, member: _Member, display: str) -> Iterator[BinaryIO]:
        """The member's stored bytes (still gzipped if they are)."""
        if member.data is not None:
            yield _InMemory(member.data)
            return
        if member.info is None:
            assert member.path is not None
            try:
                handle = open(member.path, "rb")
            except OSError as exc:
                raise _ContainerError(exc) from exc
            with handle:
                yield handle
            return
        if member.info.flag_bits & 0x1:
            # zipfile would ask for a password; we have none to give.
            raise InputError("encrypted in the zip; zip the files again without a password", display)
        try:
            archive = zipfile.ZipFile(_zip_source(self._zip_path))  # type: ignore[arg-type]
        except _READ_ERRORS as exc:
            raise _ContainerError(exc) from exc
        with archive:
            try:
                handle = archive.open(member.info)
            except NotImplementedError as exc:
                raise InputError(
                    f"compressed with a method that cannot be read ({printable(str(exc))}); zip the files again "
                    "with standard Deflate compression",
                    display,
                ) from None
            except _READ_ERRORS as exc:
                raise _ContainerError(exc) from exc
            with handle:
                yield handle


def _is_docs(name: str) -> bool:
    """Whether a member is documentation (README*, ``.md``, ``.pdf``): never read, never warned of."""
    bare = _strip_gz(name).lower()
    return bare.endswith((".md", ".pdf")) or PurePosixPath(bare).name.startswith("readme")


def _is_answers_or_docs(name: str) -> bool:
    """Whether a member is out of the running for "run": answers-like JSON or documentation."""
    return _is_docs(name) or _strip_gz(name).lower().endswith((".jsonl", ".json"))


# ---------------------------------------------------------------------------------------------
# Opening


def open_submission(path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES, subtrack: str | None = None) -> Submission:
    """Open the submission at ``path`` (zip, folder, plain or gzipped file); with ``subtrack``,
    only its part (``Submission.for_subtrack``).

    Raises ``InputError`` when the submission cannot be used at all: missing, empty after
    ignoring system files, an unsafe zip member path, a symbolic link out of the folder, a
    damaged zip, or declared sizes over ``max_bytes`` (default ``DEFAULT_MAX_BYTES``, 2 GiB).
    """
    opened = _open_any(Path(path), max_bytes)
    return opened.for_subtrack(subtrack) if subtrack is not None else opened


def in_memory_submission(files: dict[str, tuple[str, bytes]], label: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Submission:
    """A submission whose files are already bytes in memory: ``files`` maps a file name (``run.txt``,
    ``answers.jsonl``: what ``Submission.find`` tells the kinds by) to the name messages use and
    the bytes. The Python API (``reteco.api``) gives its runs and answers built from a dict or a
    DataFrame this way, so that they are read exactly as the same files in a folder would be,
    without writing them anywhere."""
    members = [_Member(name=name, original=shown, declared=len(data), data=data) for name, (shown, data) in files.items()]
    return _finish(label, members, [], max_bytes)


def _open_any(path: Path, max_bytes: int) -> Submission:
    if str(path) == STDIN:
        return _open_stdin(max_bytes)
    try:
        info = os.stat(path)  # never blocks, unlike opening a named pipe
    except FileNotFoundError:
        raise InputError("no such file or folder", str(path)) from None
    except OSError as exc:  # a name too long, a link loop, no permission on a folder above
        raise InputError(f"cannot be read ({exc.strerror or exc})", str(path)) from None
    if stat.S_ISDIR(info.st_mode):
        return _open_folder(path, max_bytes)
    if not stat.S_ISREG(info.st_mode):
        if _is_stdin(info):
            return _open_stdin(max_bytes)
        raise InputError(
            f"{_file_kind(info.st_mode)}, not a regular file: it is not read (it could block or never end); "
            f"give the path of the submission file itself, or {STDIN} to read it from standard input",
            str(path),
        )
    if _looks_like_zip(path):
        return _open_zip(path, path.name, [], max_bytes)
    member = _Member(name=path.name, original=path.name, declared=info.st_size, path=path)
    return _finish(path.name, [member], [], max_bytes)


def _is_stdin(info: os.stat_result) -> bool:
    """Whether ``info`` is this process's standard input (``/dev/stdin``, ``/proc/self/fd/0``)."""
    try:
        stdin = os.fstat(0)
    except OSError:
        return False
    return (info.st_dev, info.st_ino) == (stdin.st_dev, stdin.st_ino)


def _file_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def _open_stdin(max_bytes: int) -> Submission:
    """Standard input, read once (a pipe cannot be read twice) up to ``max_bytes``, then taken as
    a single file: a zip or a plain or gzipped file, told by its content."""
    if os.isatty(0):
        raise InputError(
            "standard input is a terminal; pipe the submission in (cat run.txt | reteco ...) or give its path",
            STDIN_LABEL,
        )
    try:
        with open(0, "rb", closefd=False) as handle:
            data = _read_capped(handle, max_bytes)
    except _TooLarge:
        raise InputError(f"larger than the limit of {_limit_text(max_bytes)}; {_HOW_TO_FIT}", STDIN_LABEL) from None
    except OSError as exc:  # no standard input at all (closed), or unreadable
        raise InputError(f"standard input cannot be read ({exc.strerror or exc})", STDIN_LABEL) from None
    if data[:4] in _ZIP_MAGICS:
        return _open_zip(data, STDIN_LABEL, [], max_bytes)
    member = _Member(name=STDIN_LABEL, original=STDIN_LABEL, declared=len(data), data=data)
    return _finish(STDIN_LABEL, [member], [], max_bytes)


def _looks_like_zip(path: Path) -> bool:
    if path.name.lower().endswith(".zip"):
        return True
    try:
        with open(path, "rb") as handle:
            return handle.read(4) in _ZIP_MAGICS
    except OSError:
        return False


def _split_zip_name(raw: str, label: str) -> tuple[str, ...]:
    """The parts of a zip member's path, or ``InputError`` if the path could escape.

    Backslashes count as separators (old Windows tools write them), so ``..\\x`` and ``C:\\x``
    are caught as well as ``../x`` and ``/x``.
    """
    text = raw.replace("\\", "/")
    if text.startswith("/") or _DRIVE.match(text) or ".." in text.split("/"):
        raise InputError(
            f"member {quoted(raw)} has an unsafe path (absolute, a drive letter, or '..'); "
            "zip the files with paths relative to the zip",
            label,
        )
    return tuple(part for part in text.split("/") if part not in ("", "."))


def _open_zip(zip_path: Path | bytes, label: str, ignored: list[str], max_bytes: int) -> Submission:
    members = _zip_members(zip_path, label, ignored, None)
    if len(members) == 1 and members[0].name.lower().endswith(".zip"):
        raise InputError(
            f"the zip holds only another zip ({quoted(members[0].original)}); zip the files themselves", label
        )
    return _finish(label, members, ignored, max_bytes, zip_path=zip_path)


def _zip_members(
    zip_path: Path | bytes, label: str, ignored: list[str], refused: list[tuple[str, str]] | None
) -> list[_Member]:
    """The candidate members of a zip, every entry's path checked. An unsafe path or a name
    that appears twice refuses the whole zip, or, with ``refused`` given, is appended to it as
    (name, why) and left out (every entry of a repeated name: which one is meant cannot be told)."""
    try:
        with zipfile.ZipFile(_zip_source(zip_path)) as archive:
            infos = archive.infolist()
    except UnicodeDecodeError as exc:
        # zipfile decodes every name flagged UTF-8 (bit 11) while listing: the zip cannot be listed.
        raise InputError(
            f"member {quoted(exc.object)} has a name marked as UTF-8 that is not valid UTF-8, so the zip "
            "cannot be listed; create the zip again",
            label,
        ) from None
    except _READ_ERRORS as exc:
        raise InputError(f"not a valid zip file ({printable(str(exc))}); create the zip again", label) from None
    if len(infos) > MAX_ENTRIES:
        raise InputError(f"the zip holds {len(infos)} entries, more than {MAX_ENTRIES}; zip only the files to score", label)
    counts: dict[tuple[str, ...], int] = {}
    kept: list[tuple[zipfile.ZipInfo, tuple[str, ...]]] = []
    for info in infos:
        # Checked for every entry, ignored ones included: an unsafe path is never innocent.
        try:
            parts = _split_zip_name(info.filename, label)
        except InputError:
            if refused is None:
                raise
            refused.append((info.filename, "an unsafe path (absolute, a drive letter, or '..')"))
            continue
        if info.is_dir() or info.filename.endswith("\\") or not parts:
            continue
        counts[parts] = counts.get(parts, 0) + 1
        if counts[parts] == 2 and refused is None:
            raise InputError(f"member {quoted(info.filename)} appears twice in the zip; zip it again", label)
        kept.append((info, parts))
    members: list[_Member] = []
    for info, parts in kept:
        if counts[parts] > 1:
            assert refused is not None
            refused.append((info.filename, f"appears {counts[parts]} times in the zip: which one is meant cannot be told"))
            continue
        if _ignore_reason(parts):
            ignored.append(f"{label}:{info.filename}")
            continue
        members.append(_Member(name="/".join(parts), original=info.filename, declared=info.file_size, info=info))
    return members


def open_archive(path: Path, *, max_bytes: int, refused: list[tuple[str, str]], advice: str) -> Submission:
    """A zip of several submissions (an organizer's bulk download), opened with the checks of a
    submission's zip (``open_submission``), except that an entry with an unsafe path or a
    repeated name is appended to ``refused`` as (name, why) and left out instead of refusing the
    whole zip, and no top folder is stripped. ``max_bytes`` caps the total read; declared sizes
    over it are refused at once (``advice`` says how to get under it). Read its members with
    ``Submission.copy_stored``.

    ``InputError`` naming the zip when it cannot be listed at all (not a zip, damaged, a name
    that cannot be decoded)."""
    path = Path(path)
    ignored: list[str] = []
    members = _zip_members(path, path.name, ignored, refused)
    _check_declared(path.name, members, max_bytes, advice)
    return Submission(path.name, members, ignored, max_bytes, zip_path=path)


def _open_folder(root: Path, max_bytes: int) -> Submission:
    root_real = root.resolve()
    ignored: list[str] = []
    members: list[_Member] = []
    entries = 0
    walked = {root_real}

    def unreadable(error: OSError) -> None:
        # os.walk skips what it cannot list unless told otherwise; a silently missing file
        # would surface later as a confusing "no run file".
        failed = Path(error.filename or root_real)
        where = failed.relative_to(root_real).as_posix() if failed.is_relative_to(root_real) else str(failed)
        where = _FOLDER_LABEL if where == "." else where
        raise InputError(f"cannot be read ({error.strerror or error})", where)

    for dirpath, dirnames, filenames in os.walk(root_real, onerror=unreadable, followlinks=True):
        here = Path(dirpath)
        rel_here = here.relative_to(root_real)
        kept = []
        for dirname in sorted(dirnames):
            real = _resolve_inside(here / dirname, root_real, (rel_here / dirname).as_posix())
            # A link back up the tree, or a second way to a folder already walked: skip it, so
            # a link loop cannot make the walk endless.
            if real not in walked:
                walked.add(real)
                kept.append(dirname)
        dirnames[:] = kept
        for filename in sorted(filenames):
            entries += 1
            if entries > MAX_ENTRIES:
                raise InputError(
                    f"the submission folder holds more than {MAX_ENTRIES} files; submit only the files to score",
                    _FOLDER_LABEL,
                )
            rel = (rel_here / filename).as_posix()
            real = _resolve_inside(here / filename, root_real, rel)
            parts = tuple(PurePosixPath(rel).parts)
            if _ignore_reason(parts):
                ignored.append(rel)
                continue
            try:
                info = os.stat(real)
            except OSError:
                raise InputError("a broken symbolic link; submit the file itself", rel) from None
            if not stat.S_ISREG(info.st_mode):
                raise InputError("not a regular file; submit plain files only", rel)
            members.append(_Member(name=rel, original=rel, declared=info.st_size, path=real))
    if len(members) == 1 and _looks_like_zip(members[0].path):  # type: ignore[arg-type]
        # The zip was handed over unextracted (or the participant zipped a zip's folder).
        only = members[0]
        return _open_zip(only.path, only.original, ignored, max_bytes)  # type: ignore[arg-type]
    return _finish(_FOLDER_LABEL, members, ignored, max_bytes)


def _resolve_inside(path: Path, root_real: Path, rel: str) -> Path:
    """The real path of a folder entry, refusing a symbolic link that leads out of the folder."""
    try:
        real = path.resolve()
    except (RuntimeError, OSError):  # a link loop (RuntimeError before Python 3.13), too many levels
        raise InputError("a symbolic link that leads to itself (a loop); submit the file itself", rel) from None
    if not real.is_relative_to(root_real):
        raise InputError("a symbolic link pointing outside the submission folder; submit the file itself", rel)
    return real


def _finish(
    label: str,
    members: list[_Member],
    ignored: list[str],
    max_bytes: int,
    *,
    zip_path: Path | bytes | None = None,
) -> Submission:
    """Checks common to every container, then the top-folder stripping."""
    if not members:
        said = f" (ignored: {_list_names(ignored)})" if ignored else ""
        raise InputError(f"no file found in the submission{said}; submit the run file, e.g. run.txt", label)
    _check_declared(label, members, max_bytes)
    return Submission(label, _strip_top_folders(members), ignored, max_bytes, zip_path=zip_path)


def _check_declared(label: str, members: list[_Member], max_bytes: int, advice: str = _HOW_TO_FIT) -> None:
    """Refuse, before anything is decompressed, members whose declared sizes sum over the cap."""
    declared = sum(m.declared for m in members)
    if declared > max_bytes:
        raise InputError(
            f"the files in the submission declare {_limit_text(declared)} in total, over the limit "
            f"of {_limit_text(max_bytes)}; {advice}",
            label,
        )


def _strip_top_folders(members: list[_Member]) -> list[_Member]:
    """Members without the folders that all of them share (Codabench keeps the zip's top folder;
    some tools store whole paths). A folder named like a sub-track is never stripped: it says
    which sub-track its files are for (``Submission.for_subtrack``)."""
    parts = [PurePosixPath(m.name).parts for m in members]
    depth = 0
    while (
        all(len(p) > depth + 1 for p in parts)
        and len({p[depth] for p in parts}) == 1
        and parts[0][depth].lower() not in SUBTRACK_IDS
    ):
        depth += 1
    return [dataclasses.replace(m, name="/".join(p[depth:])) for m, p in zip(members, parts)]
