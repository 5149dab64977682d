"""Folders and files only their owner may read: the quarantine, publication staging and the label
key. Made so whatever the umask (a folder is created 0700 and a file 0600, and an existing one is
tightened), so a release that was not approved, holding training records maybe, is never readable
by another user of the machine.

What is meant to be read (a published release) gets :func:`shared_modes`: what the umask of the
publishing process gives a new folder and file, as any other program's output would.

Nothing here follows a symbolic link. A link planted in the workdir (``quarantine``, a release's
folder or its file pointing elsewhere) would otherwise have the gate chmod a stranger's file 0600
and write a release, maybe of training records, wherever the link points. Every create, chmod and
rename opens its last component with ``O_NOFOLLOW`` (or refuses a link there), and given ``root``
(the workdir) checks that no folder between ``root`` and the path is a link: :class:`LinkRefused`,
an ``OSError`` naming the path and what to do, which the gate reports in its BLOCK.

>>> import tempfile, stat
>>> folder = private_dir(Path(tempfile.mkdtemp()) / "q")
>>> oct(stat.S_IMODE(folder.stat().st_mode))
'0o700'
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path
from typing import BinaryIO

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class LinkRefused(OSError):
    """A path the gate would write, chmod or rename through is a symbolic link (or lies under one).
    An ``OSError`` with the path as its ``filename``: ``errors.safe_reason`` shows it in the
    BLOCK."""

    def __init__(self, path: Path | str):
        super().__init__(
            errno.ELOOP,
            "a symbolic link, which the gate never follows (it could point out of the "
            f"workdir); remove the link (rm {path}) and run again",
            str(path),
        )


def confine(path: Path, root: Path | None) -> Path:
    """``path``, after checking that no existing component of it below ``root`` is a symbolic link
    (``root`` itself may be one: the operator chose it). A path outside ``root`` is refused too.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp()); (root / "q").symlink_to("/tmp")
    >>> try:
    ...     confine(root / "q" / "x", root)
    ... except LinkRefused as exc:
    ...     print(exc.filename == str(root / "q"), exc.strerror.startswith("a symbolic link"))
    True True
    """
    path = Path(path)
    if root is None:
        return path
    root = Path(root)
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        raise ValueError(f"{path} is not under {root}") from None
    if ".." in parts:
        raise ValueError(f"{path}: '..' is not allowed under {root}")
    here = root
    for part in parts:
        here = here / part
        if os.path.islink(here):
            raise LinkRefused(here)
    return path


def _open_nofollow(path: Path, flags: int, mode: int = 0o777) -> int:
    """``os.open`` that refuses a symbolic link as the last component (:class:`LinkRefused`)."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | _CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP or os.path.islink(path):
            raise LinkRefused(path) from None
        raise


def private_dir(path: Path, *, parents: bool = False, root: Path | None = None) -> Path:
    """``path`` as a folder only its owner may enter (0700): created so if missing, tightened if it
    is wider (a folder left by an older version). ``parents``: create missing parents the usual way
    (the workdir itself is not private). A folder this user may not chmod raises (fail closed), and
    so does a link (:class:`LinkRefused`): at ``path``, or, given ``root``, anywhere below it."""
    path = confine(Path(path), root)
    if parents:
        path.parent.mkdir(parents=True, exist_ok=True)
        confine(path, root)  # a link planted meanwhile
    try:
        path.mkdir(
            mode=PRIVATE_DIR_MODE
        )  # the umask can only remove bits from 0700; never follows a last link
    except FileExistsError:
        pass
    _chmod_nofollow(
        path, os.O_RDONLY | os.O_DIRECTORY, PRIVATE_DIR_MODE
    )  # a file there: NotADirectoryError
    return path


def private_file(path: Path, *, root: Path | None = None) -> Path:
    """Tighten an existing file to 0600 (a link there, or under ``root``, is refused, never
    followed)."""
    path = confine(Path(path), root)
    _chmod_nofollow(path, os.O_RDONLY, PRIVATE_FILE_MODE)
    return path


def _chmod_nofollow(path: Path, flags: int, mode: int) -> None:
    """chmod ``path`` through a descriptor opened without following a last link."""
    fd = _open_nofollow(path, flags)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def open_private(path: Path, *, root: Path | None = None) -> BinaryIO:
    """A new file (it must not exist, not even as a link) opened for writing, 0600 from its
    creation."""
    path = confine(Path(path), root)
    fd = _open_nofollow(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    os.fchmod(fd, PRIVATE_FILE_MODE)  # O_CREAT's mode passes through the umask too
    return os.fdopen(fd, "wb")


def copy_private(src: Path, dst: Path, *, root: Path | None = None) -> None:
    """Copy ``src`` to the new file ``dst``, 0600 from its creation."""
    with open(src, "rb") as fin, open_private(dst, root=root) as fout:
        shutil.copyfileobj(fin, fout, 1 << 20)


def write_private(path: Path, data: bytes, *, root: Path | None = None) -> None:
    with open_private(path, root=root) as fh:
        fh.write(data)


def replace_private(src: Path, dst: Path, *, root: Path | None = None) -> None:
    """Move ``src`` over ``dst`` atomically (same filesystem). A link at ``dst`` is refused rather
    than replaced: it was planted, and silently replacing it would hide that."""
    confine(Path(src), root)
    confine(Path(dst), root)
    if os.path.islink(dst):
        raise LinkRefused(dst)
    os.replace(src, dst)


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


__all__ = [
    "PRIVATE_DIR_MODE",
    "PRIVATE_FILE_MODE",
    "LinkRefused",
    "confine",
    "copy_private",
    "current_umask",
    "make_shared",
    "open_private",
    "private_dir",
    "private_file",
    "replace_private",
    "shared_modes",
    "write_private",
]
