"""What every command that writes results checks first: that ``--out`` can be a folder."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from reteco.problems import MAX_FILE_NAME, InputError, printable


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
