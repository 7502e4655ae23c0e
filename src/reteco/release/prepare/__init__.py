"""``reteco prepare``: turn an organizers' release folder into reference data, one folder per sub-track.

``prepare_release(release, split, out)`` reads ``release/track1_tempo`` and ``release/track2_recor``
(per-domain release layout or the flat public sample, see ``reteco.formats.release``) and writes
``out/1a``, ``out/1b``, ``out/2a``, ``out/2b``, ``out/2c`` in the ``reteco-reference/1`` format
(``reteco.formats.reference``). It returns a summary of what it wrote and of every oddity it
met, for the organizers (counts, never document ids).

Decisions worth knowing:

- Relevance comes from a domain's qrels file when there is one (the official judgments), else
  from the gold ids of the json records. Where both exist they are compared and disagreements
  counted. A topic left with no relevant document is dropped: nothing can be measured on it.
- Gold ids missing from the corpus are kept in the qrels (dropping them would inflate every
  score) and counted.
- A removed id of a ``duplicate_map.json`` in qrels or gold ids is replaced by its kept id,
  using the map of the topic's own domain; all domains' maps are merged into the reference's
  DuplicateMap so scoring can map runs the same way. Chains (a -> b -> kept) are followed to
  their end, here and in the written map alike; a cycle (a -> b -> a) is an error naming the
  ids and the file.
- Every sub-track asked for must get at least one topic: a split whose files do not exist (or
  whose topics all lack a relevant document) is an error that lists the splits the release's
  file names give, raised after the topic files are read and before anything is written. The
  flat sample's files carry no split and serve whichever split is asked.
- In the flat layout the corpus is not split by domain: a Track-1 document belongs to the
  domain its id is prefixed with, a Track-2 document to the domains whose gold ids cite it; an
  unattributable document is accepted in every domain.
- Each sub-track folder is built beside its destination and moved into place at the end, so a
  failed run never leaves a half-written reference; an existing destination is replaced only
  if it is a reference folder (or empty).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterable

from reteco import __version__
from reteco.formats import release as rel
from reteco.problems import InputError, Problems
from reteco.release.prepare.drafts import CollectedTrack
from reteco.release.prepare.staging import PrepareContext, check_destination
from reteco.release.prepare.track1 import build_track1, collect_track1
from reteco.release.prepare.track2 import build_track2, collect_track2
from reteco.subtracks import SUBTRACK_IDS, of_track


def prepare_release(
    release: Path,
    split: str,
    out: Path,
    subtracks: Iterable[str] = SUBTRACK_IDS,
    *,
    progress: bool = False,
) -> dict:
    """Read an organizers' release folder and write reference data to ``out/<sub-track>``.

    ``release`` holds ``track1_tempo/`` and/or ``track2_recor/`` in the release or the flat
    sample layout; ``split`` picks the ``*_<split>`` files (``train``, ``dev``, ...). A track
    whose folder is absent is skipped and said so. Returns the summary: per track and per
    sub-track counts, and a list of warnings for the organizers. Raises ``InputError`` (file and
    line) on malformed release files, and (writing nothing) when a sub-track asked for of a
    present track gets no topic. With ``progress``, a bar on stderr shows the MB of documents read.
    """
    release = Path(release)
    out = Path(out)
    wanted = list(dict.fromkeys(subtracks))
    unknown = [s for s in wanted if s not in SUBTRACK_IDS]
    if unknown:
        raise InputError(f"unknown sub-track(s) {', '.join(unknown)}; choose from {', '.join(SUBTRACK_IDS)}")
    if not split or "/" in split or split.strip() != split:
        raise InputError(f"invalid split name {split!r}")
    if not release.is_dir():
        raise InputError("release folder not found", str(release))
    for sub in wanted:
        check_destination(out / sub)

    summary: dict = {
        "release": str(release),
        "split": split,
        "out": str(out),
        "created_by": f"reteco {__version__}",
        "tracks": {},
        "subtracks": {},
        "warnings": [],
    }
    context = PrepareContext(release, split, out, summary, progress=progress)
    present = 0
    collected: list[tuple[CollectedTrack, object]] = []
    # First every track's topic files, then (only if every sub-track asked for has topics) the
    # corpora and the folders: a split that gives nothing is refused before anything is written.
    for track_dir, subs, collect, build in (
        (rel.TRACK1_DIR, of_track(1), collect_track1, build_track1),
        (rel.TRACK2_DIR, of_track(2), collect_track2, build_track2),
    ):
        mine = [s for s in wanted if s in subs]
        folder = release / track_dir
        layout = rel.detect_layout(folder)
        if layout is not None:
            present += 1
        if not mine:
            summary["tracks"][track_dir] = {"status": "not requested"}
            continue
        if layout is None:
            reason = f"{track_dir}/ absent" if not folder.exists() else f"{track_dir}/ holds no release files"
            summary["tracks"][track_dir] = {"status": "absent"}
            for sub in mine:
                summary["subtracks"][sub] = {"status": "skipped", "reason": reason}
            summary["warnings"].append(f"{track_dir}: {reason}; sub-tracks {', '.join(mine)} not written")
            continue
        collected.append((collect(context, folder, layout, mine), build))
    if present == 0:
        raise InputError(
            f"neither {rel.TRACK1_DIR}/ nor {rel.TRACK2_DIR}/ found: not an organizers' release folder", str(release)
        )
    _refuse_subtracks_without_topics(context, [c for c, _ in collected])
    for track, build in collected:
        try:
            build(context, track)
        finally:
            # Whatever was not moved into place is incomplete: never leave it behind.
            for staging in context.staged:
                if staging.exists():
                    shutil.rmtree(staging)
            context.staged.clear()
    return summary


def _refuse_subtracks_without_topics(ctx: "PrepareContext", tracks: list["CollectedTrack"]) -> None:
    """An ``InputError`` when a sub-track asked for gives no topic (a split that does not exist,
    a topic file missing, every topic without a relevant document), saying why, one line per
    sub-track, and which splits the release's file names hold."""
    problems = Problems()
    where = str(ctx.release)
    for track in tracks:
        for sub in track.wanted:
            target = track.sets[sub]
            if track.settled[sub][1]:
                continue
            reasons = []
            if target.stats["dropped_topics"]:
                reasons.append(f"its {target.stats['dropped_topics']} topics have no relevant document")
            if target.stats["topics_without_domain"]:
                reasons.append(f"its {target.stats['topics_without_domain']} topics have no gold id to tell their domain")
            prefix = f"{target.name}: "
            reasons += [m.removeprefix(prefix) for m in target.missing_messages() + target.absent]
            problems.error(
                where, None, f"sub-track {sub}: split {ctx.split!r} gives no topic: {'; '.join(reasons) or 'no topic file'}"
            )
    if not problems.has_errors:
        return
    found = rel.splits_in_release(ctx.release)
    if ctx.split in found:
        listing = (
            f"the release's files of split {ctx.split!r} give no topic for these sub-tracks (the splits its file "
            f"names give: {', '.join(found)})"
        )
    elif found:
        listing = f"split {ctx.split!r} is not in this release: the splits its file names give are {', '.join(found)}"
    else:
        listing = "no file name of this release names a split (the flat sample's files serve any split)"
    problems.error(where, None, f"{listing}; nothing was written")
    raise InputError(problems)


def format_summary(summary: dict) -> str:
    """The summary as a few human-readable lines (what the CLI prints)."""
    lines = [f"prepared {summary['release']} (split {summary['split']}) -> {summary['out']}"]
    for name, track in summary["tracks"].items():
        if track.get("status") != "prepared":
            lines.append(f"  {name}: {track.get('status')}")
            continue
        lines.append(
            f"  {name}: {track['layout']} layout, {len(track['domains'])} domains, {track['documents']} documents"
        )
    for sub, info in summary["subtracks"].items():
        if info.get("status") != "written":
            lines.append(f"  {sub}: {info.get('status')} ({info.get('reason', '')})")
            continue
        parts = [f"{info['topics']} topics", f"{info['units']} units", f"{info['judgments']} judgments"]
        if "conversations" in info:
            parts.insert(0, f"{info['conversations']} conversations")
        if "passages" in info:
            parts.append(f"{info['passages']} passages")
        if info.get("dropped_topics"):
            parts.append(f"{info['dropped_topics']} dropped (no relevant document)")
        lines.append(f"  {sub}: " + ", ".join(parts) + f" -> {info['path']}")
    for warning in summary["warnings"]:
        lines.append(f"  warning: {warning}")
    return "\n".join(lines)
