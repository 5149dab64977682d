"""Folders and files only their owner may read: the quarantine, publication staging and the label
key. Made so whatever the umask (a folder is created 0700 and a file 0600, and an existing one is
tightened), so a release that was not approved, holding training records maybe, is never readable
by another user of the machine.

What is meant to be read (a published release) gets :func:`shared_modes`: what the umask of the
publishing process gives a new folder and file, as any other program's output would.

>>> import tempfile, stat
>>> folder = private_dir(Path(tempfile.mkdtemp()) / "q")
>>> oct(stat.S_IMODE(folder.stat().st_mode))
'0o700'
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import BinaryIO

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def private_dir(path: Path, *, parents: bool = False) -> Path:
    """``path`` as a folder only its owner may enter (0700): created so if missing, tightened if it
    is wider (a folder left by an older version). ``parents``: create missing parents the usual way
    (the workdir itself is not private). A folder this user may not chmod raises (fail closed)."""
    path = Path(path)
    if parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.mkdir(mode=PRIVATE_DIR_MODE)  # the umask can only remove bits from 0700
    except FileExistsError:
        if not path.is_dir():
            raise
    os.chmod(path, PRIVATE_DIR_MODE)
    return path


def private_file(path: Path) -> Path:
    """Tighten an existing file to 0600."""
    os.chmod(path, PRIVATE_FILE_MODE)
    return Path(path)


def open_private(path: Path) -> BinaryIO:
    """A new file (it must not exist) opened for writing, 0600 from its creation."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), PRIVATE_FILE_MODE)
    os.fchmod(fd, PRIVATE_FILE_MODE)  # O_CREAT's mode passes through the umask too
    return os.fdopen(fd, "wb")


def copy_private(src: Path, dst: Path) -> None:
    """Copy ``src`` to the new file ``dst``, 0600 from its creation."""
    with open(src, "rb") as fin, open_private(dst) as fout:
        shutil.copyfileobj(fin, fout, 1 << 20)


def write_private(path: Path, data: bytes) -> None:
    with open_private(path) as fh:
        fh.write(data)


def current_umask() -> int:
    """This process's umask, read without changing it where the OS tells it (Linux
    ``/proc/self/status``); elsewhere set to 0o077 for an instant and restored (a file another
    thread creates meanwhile is made more private, never less)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o077)
    os.umask(old)
    return old


def shared_modes() -> tuple[int, int]:
    """(folder mode, file mode) a new folder and file get under this process's umask: what a
    published release is given once it leaves private staging."""
    mask = current_umask()
    return 0o777 & ~mask, 0o666 & ~mask


def make_shared(folder: Path, files: list[Path]) -> None:
    """Give a finished folder and its ``files`` the modes of :func:`shared_modes` (a published
    release, once complete: meant to be read)."""
    folder_mode, file_mode = shared_modes()
    for path in files:
        os.chmod(path, file_mode)
    os.chmod(folder, folder_mode)


__all__ = ["PRIVATE_DIR_MODE", "PRIVATE_FILE_MODE", "copy_private", "current_umask", "make_shared", "open_private",
           "private_dir", "private_file", "shared_modes", "write_private"]
