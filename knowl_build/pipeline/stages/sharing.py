"""Files a build shares with the build before: linked, not copied, where nothing changed
(kept builds share what did not change; neither is ever written again)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def share(source: Path, target: Path) -> bool:
    """Link `target` to the unchanged file `source` of the build before. False where the
    file system links nothing: the caller writes or copies it."""
    try:
        os.link(source, target)
    except OSError:
        return False
    return True


def share_index(source: Path, target: Path) -> None:
    """The previous index, to update in `target`: its segment files shared (Whoosh never
    writes a segment file again; it adds segments and records deletions in the table of
    contents), the small files it rewrites in place copied."""
    target.mkdir()
    with os.scandir(source) as entries:
        for entry in entries:
            if not entry.is_file(follow_symlinks=False):
                continue
            destination = target / entry.name
            if not (entry.name.endswith(".seg") and share(Path(entry.path), destination)):
                shutil.copyfile(entry.path, destination)
