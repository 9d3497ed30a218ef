"""Whether a folder that a command is to create and write can be made where the user pointed:
a file in the way, a read-only or virtual filesystem (`/proc`, `/sys`), a folder this user may
not write to. Said in words, with the fix, before anything is written."""

import errno
import os
import tempfile
from pathlib import Path
from typing import Optional, Union

FIX = "give the path of a folder (it is created if missing)"
WRITABLE_FIX = "give a folder on a filesystem you can write to"


def cannot_create_in(folder: Path, error: OSError) -> str:
    """Why creating something in the existing folder `folder` failed with `error`."""
    code = error.errno
    if code == errno.EROFS:
        return f"{folder} is on a read-only filesystem"
    if code in (errno.EACCES, errno.EPERM):
        return f"this user may not create files in {folder} ({error.strerror})"
    if code in (errno.ENOSPC, errno.EDQUOT):
        return f"the device of {folder} is full ({error.strerror})"
    if code == errno.ENOENT:
        # The folder exists, yet a name in it "does not": a virtual filesystem such as /proc.
        return f"{folder} takes no new files or folders ({error.strerror}: a virtual filesystem?)"
    return f"creating a folder in {folder} failed ({error.strerror or error})"


def folder_problem(path: Union[str, Path]) -> Optional[str]:
    """
    What stops `path` from being used as a folder to write into, as the end of a sentence that
    starts with the path ("is a file, not a folder; give ..."), or `None`. The nearest folder that
    exists gets a temporary folder, removed at once: nothing stays behind.
    """
    path = Path(path)
    for existing in (path, *path.parents):
        if not (existing.exists() or existing.is_symlink()):
            continue
        if not existing.is_dir():
            where = "is" if existing == path else f"lies under {existing}, which is"
            return f"{where} a file, not a folder; {FIX}."
        try:
            probe = tempfile.mkdtemp(prefix=".tune-write-check-", dir=existing)
        except OSError as error:
            what = "cannot be written" if existing == path else "cannot be created"
            return f"{what}: {cannot_create_in(existing, error)}; {WRITABLE_FIX}."
        os.rmdir(probe)
        return None
    return None


def make_folder_problem(path: Union[str, Path], error: OSError) -> str:
    """`folder_problem`'s sentence end for an `error` raised while creating `path`."""
    path = Path(path)
    problem = folder_problem(path)
    if problem is not None:
        return problem
    existing = next((p for p in path.parents if p.is_dir()), path.parent)
    return f"cannot be created: {cannot_create_in(existing, error)}; {WRITABLE_FIX}."
