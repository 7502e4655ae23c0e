"""What every command that writes results checks first: that ``--out`` can be a folder, and that
no two of its output files are one file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from reteco.problems import MAX_FILE_NAME, InputError, UsageError, printable


def check_output_folder(folder: Path, option: str) -> None:
    """Refuse an output folder that cannot be one, before any work: ``folder`` or one of its
    parents is an existing file (InputError naming the path). A folder that does not exist yet
    is fine: it is created when the results are written."""
    for here in (folder, *folder.parents):
        try:
            mode = os.stat(here).st_mode
        except (FileNotFoundError, NotADirectoryError):
            if not os.path.islink(here):  # a dangling link is there, and is no folder
                continue  # not there yet (or below a file, found one level up)
            mode = 0
        except OSError as exc:  # a name too long, a link loop, no permission
            raise InputError(f"{option} cannot be used ({exc.strerror or exc})", str(folder)) from None
        if stat.S_ISDIR(mode):
            return
        if here == folder:
            message = f"{option} exists and is not a folder; give a folder (it is created if needed)"
        else:
            message = f"{option} cannot be created: {printable(str(here), MAX_FILE_NAME)} exists and is not a folder"
        raise InputError(message, str(folder))


def check_distinct_outputs(outputs: dict[str, Path | None]) -> None:
    """Refuse, before any work, two outputs (option or role -> path; None: not asked for) that
    are one file: the second written would replace the first (e.g. the rating sheet by the
    context file, which holds reference data). Paths are compared resolved, so different
    spellings (``a/../b``, ``./b``) and symbolic links count as the same file, and an existing
    file reached by two names (a hard link) too. UsageError (exit 2) naming both options."""
    seen: dict[Path, str] = {}
    for option, path in outputs.items():
        if path is None:
            continue
        try:
            real = Path(os.path.abspath(path)).resolve()
        except (OSError, RuntimeError):  # a link loop: writing it fails later with its own message
            continue
        for known, other in seen.items():
            if real == known or _same_existing_file(real, known):
                raise UsageError(
                    f"{option} and {other} are the same file ({printable(str(real), MAX_FILE_NAME)}): the one "
                    "written last would replace the other; give them different paths"
                )
        seen[real] = option


def _same_existing_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist yet
        return False
