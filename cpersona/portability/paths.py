"""Where export/import files may be, and opening them without a check-then-use race (docs/tools.md#export_memories).

MCP tools may only read and write files under the export directory
(``CPERSONA_EXPORT_DIR``, default ``<db dir>/exports``, created on first use);
under an ACL each client has its own folder in it, ``clients/<client name>/``
(see ``grants.py``). A relative path is taken relative to that folder; an
absolute path must already lie inside it; a ``..`` component is refused.

Checking a path and then opening it by name loses to a process that swaps a
component for a symlink in between (issue 17). So a path is never resolved and
reopened: the folder is opened once, each further component is opened relative
to the descriptor of the one before with ``O_NOFOLLOW`` (a symlink anywhere
below the folder is refused, even one pointing inside), and the file itself is
opened, created (``O_CREAT|O_EXCL`` temp file) and renamed relative to its
directory's descriptor. Whatever a racing process renames, every byte read or
written is inside the folder, and so is every ``.partial`` temp file.

The operator CLI is not confined (``confined=False``): the path is used as
given, symlinks followed as ``cp`` would, but a device, FIFO or directory is
never replaced by the export (``-`` is standard output: service.py).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import BinaryIO, TextIO

from cpersona.config import Settings
from cpersona.core.text import LONE_SURROGATE
from cpersona.errors import CPersonaError, InvalidInput

#: Longest file or folder name most file systems hold (bytes of UTF-8).
MAX_NAME_BYTES = 255
#: Characters of the target's name kept in its temp file's name (the rest is prefix, random and suffix).
_TEMP_STEM_CHARS = 64
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
#: ``os.link`` refusals that mean "this file system has no hard links", not "the name is taken".
_NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.ENOSYS, errno.EXDEV}


class PathRefused(CPersonaError):
    """An export/import path points outside the allowed export directory, or through a symlink."""

    code = "path_refused"


class FileMissing(CPersonaError):
    """The file to import does not exist (same code as a file that is not an export)."""

    code = "invalid_file"


class FileProblem(CPersonaError):
    """The operating system refused to read or write the file (permissions, disk full, read-only)."""

    code = "file_error"


def export_root(settings: Settings) -> Path:
    """The directory MCP export/import paths are confined to."""
    return (settings.export_dir or settings.db_path.parent / "exports").expanduser()


#: The folder, below the export directory, holding one ACL client's files.
CLIENTS_FOLDER = "clients"


@dataclass
class Place:
    """A directory held open by descriptor and a name in it: the file one export or import means.

    ``shown`` is the path reported back (never reopened). ``confined`` places refuse any
    symlink at ``name``; the CLI's follow one to a regular file (resolved by ``locate``).
    """

    dir_fd: int
    name: str
    shown: Path
    confined: bool

    def close(self) -> None:
        """Release the directory descriptor."""
        if self.dir_fd >= 0:
            os.close(self.dir_fd)
            self.dir_fd = -1

    def __enter__(self) -> Place:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def kind(self) -> str | None:
        """What ``name`` is now: None (nothing), file, dir, symlink or special (device, FIFO, socket)."""
        try:
            info = os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=not self.confined)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise file_error(exc, self.shown, "look at") from exc
        if stat.S_ISLNK(info.st_mode):
            return "symlink"
        if stat.S_ISREG(info.st_mode):
            return "file"
        return "dir" if stat.S_ISDIR(info.st_mode) else "special"


def file_error(exc: OSError, path: Path | str, action: str) -> CPersonaError:
    """The clear, coded error for an OS refusal while ``action``-ing ``path`` (never ``internal``)."""
    code = exc.errno
    if code == errno.ENAMETOOLONG:
        return InvalidInput(f"the file name is too long for the file system (at most {MAX_NAME_BYTES} bytes)")
    if code == errno.ENOENT and action == "read":
        return FileMissing(f"{path} does not exist")
    if code == errno.ELOOP:
        return PathRefused(f"{path}: a symlink is not followed inside the export directory")
    if code == errno.ENOTDIR:
        return InvalidInput(f"{path}: a component of the path is a file, not a directory")
    if code == errno.EISDIR:
        return InvalidInput(f"{path} is a directory")
    reasons = {
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.EROFS: "the file system is read-only",
        errno.ENOSPC: "the disk is full",
        errno.EDQUOT: "the disk quota is exceeded",
        errno.ENOENT: "the file system does not allow creating files there",
    }
    reason = reasons.get(code or 0, exc.strerror or type(exc).__name__)
    return FileProblem(f"cannot {action} {path}: {reason}")


def _check_names(parts: list[str]) -> None:
    for part in parts:
        if len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
            raise InvalidInput(
                f"the file name {part[:40]!r}… is too long for the file system "
                f"(at most {MAX_NAME_BYTES} bytes per name)"
            )


def _clean(requested: object) -> str:
    if not isinstance(requested, str) or not requested.strip():
        raise PathRefused("the path is empty")
    if "\x00" in requested:
        raise PathRefused("the path contains a NUL byte")
    if LONE_SURROGATE.search(requested):  # no file system name can hold one (os.open raises)
        raise PathRefused("the path contains a lone UTF-16 surrogate, which no file name can hold")
    return requested.strip()


def locate(
    settings: Settings, requested: str, *, confined: bool, folder: str | None = None, create: bool = False
) -> Place:
    """Open the directory that will hold ``requested`` and return it with the file's name.

    ``folder`` is an ACL client's own folder below the export directory. ``create`` makes
    missing folders (exports). Raises PathRefused, InvalidInput, FileMissing or FileProblem.
    """
    text = _clean(requested)
    if not confined:
        return _locate_unconfined(text, create)
    root = export_root(settings)
    if ".." in PurePath(text).parts:
        raise PathRefused(f"'..' is not allowed in export/import paths; use a path inside {root}")
    try:
        root.mkdir(parents=True, exist_ok=True)  # the operator's setting: a symlinked root is fine
        real_root = root.resolve()
    except OSError as exc:
        raise file_error(exc, root, "create the export directory") from exc
    prefix = [CLIENTS_FOLDER, folder] if folder is not None else []
    home = real_root.joinpath(*prefix)
    given = PurePath(text)
    if given.is_absolute():
        rel = _relative_to_any(given, (home, root.absolute().joinpath(*prefix)))
        if rel is None:
            raise PathRefused(
                f"{text!r} is refused: it is outside the export directory {home} "
                "(CPERSONA_EXPORT_DIR); give a file name relative to it"
            )
    else:
        rel = [p for p in given.parts if p not in ("", ".")]
    if not rel:
        raise PathRefused(f"{text!r} names the export directory itself; give a file name inside it")
    _check_names(rel)
    fd = _open_dir(str(real_root), real_root)
    try:
        shown = real_root
        for part in [*prefix, *rel[:-1]]:
            shown = shown / part
            try:
                child = _step(fd, part, shown, create)
            except FileMissing as exc:
                raise FileMissing(f"{home.joinpath(*rel)} does not exist") from exc
            os.close(fd)
            fd = child
        return Place(fd, rel[-1], home.joinpath(*rel), confined=True)
    except BaseException:
        os.close(fd)
        raise


def _relative_to_any(path: PurePath, bases: tuple[Path, ...]) -> list[str] | None:
    for base in bases:
        try:
            return [p for p in path.relative_to(base).parts if p not in ("", ".")]
        except ValueError:
            continue
    return None


def _open_dir(path: str, shown: Path) -> int:
    try:
        return os.open(path, _DIR_FLAGS)
    except OSError as exc:
        raise file_error(exc, shown, "open the directory") from exc


def _step(fd: int, part: str, shown: Path, create: bool) -> int:
    """The descriptor of ``part`` in directory ``fd``, opened without following a symlink."""
    try:
        try:
            child = os.open(part, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
        except FileNotFoundError:
            if not create:
                raise
            with suppress(FileExistsError):
                os.mkdir(part, 0o700, dir_fd=fd)
            child = os.open(part, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            try:
                mode: int | None = os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode
            except OSError:
                mode = None
            if exc.errno == errno.ELOOP or (mode is not None and stat.S_ISLNK(mode)):
                raise PathRefused(
                    f"{shown} is a symlink: symlinks are not followed inside the export directory"
                ) from exc
            if mode is not None and not stat.S_ISDIR(mode):
                raise InvalidInput(f"{shown} is a file, not a directory") from exc
            raise _changed(shown) from exc
        if exc.errno == errno.ENOENT and create:
            raise _changed(shown) from exc
        raise file_error(exc, shown, "read" if not create else "create the directory") from exc
    return child


def _changed(shown: Path) -> FileProblem:
    return FileProblem(
        f"{shown} changed while it was being opened (another process moved or replaced it); "
        "nothing was read or written"
    )


def _locate_unconfined(text: str, create: bool) -> Place:
    path = Path(os.path.abspath(Path(text).expanduser()))
    _check_names(list(path.parts[1:]))
    try:
        if path.is_symlink() and path.is_file():
            path = path.resolve()  # like cp: write through a symlink to a regular file
    except OSError as exc:
        raise file_error(exc, path, "read") from exc
    parent = path.parent
    if create:
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError as exc:
            raise InvalidInput(f"{parent} is a file, not a directory") from exc
        except OSError as exc:
            raise file_error(exc, parent, "create the directory") from exc
    if not parent.is_dir():
        if parent.exists():
            raise InvalidInput(f"{parent} is a file, not a directory")
        raise FileMissing(f"{path} does not exist (no directory {parent})")
    return Place(_open_dir(str(parent), parent), path.name, path, confined=False)


# -- reading -----------------------------------------------------------------------------------


def open_for_reading(place: Place) -> tuple[BinaryIO, int]:
    """The file at ``place`` opened for binary reading, and its size (0 for a pipe).

    A symlink is refused in confined places (``O_NOFOLLOW``). A directory, device or
    socket is refused; a FIFO only outside the export directory (the CLI, as ``-``).
    """
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | (_NOFOLLOW if place.confined else 0)
    try:
        fd = os.open(place.name, flags, dir_fd=place.dir_fd)
    except OSError as exc:
        raise file_error(exc, place.shown, "read") from exc
    try:
        info = os.fstat(fd)
        fifo_ok = stat.S_ISFIFO(info.st_mode) and not place.confined
        if not (stat.S_ISREG(info.st_mode) or fifo_ok):
            what = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            raise InvalidInput(f"{place.shown} is {what}; an export is read from a regular file")
        os.set_blocking(fd, True)  # O_NONBLOCK only kept a FIFO's open from waiting for a writer
        return os.fdopen(fd, "rb"), info.st_size if stat.S_ISREG(info.st_mode) else 0
    except BaseException:
        os.close(fd)
        raise


# -- writing -----------------------------------------------------------------------------------


@contextmanager
def atomic_write(
    place: Place, *, overwrite: bool, before_replace: Callable[[Place], None] | None = None
) -> Iterator[TextIO]:
    """Yield a UTF-8 text handle; on a clean exit its text becomes ``place`` in one rename.

    The temp file is created ``O_CREAT|O_EXCL`` (mode 0600) in the same directory
    descriptor and renamed with it, so neither can land elsewhere. An existing name is
    refused unless ``overwrite``; a directory, device, FIFO or (confined) symlink always.
    ``before_replace`` may refuse replacing an existing file (the ACL check on its rows).
    Any exception removes the temp file and leaves the target as it was.
    """
    _check_replaceable(place, overwrite, before_replace)
    temp = f".{place.name[:_TEMP_STEM_CHARS]}.{secrets.token_hex(4)}.partial"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | _NOFOLLOW
    try:
        fd = os.open(temp, flags, 0o600, dir_fd=place.dir_fd)
    except OSError as exc:
        if exc.errno == errno.ENOENT and os.fstat(place.dir_fd).st_nlink == 0:
            raise _changed(place.shown.parent) from exc  # the folder was removed after it was opened
        raise file_error(exc, place.shown, "create a file beside") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            try:
                yield handle
                handle.flush()
                os.fsync(handle.fileno())
            except OSError as exc:
                raise file_error(exc, place.shown, "write") from exc
        _commit(place, temp, overwrite)
    except BaseException:
        with suppress(OSError):
            os.unlink(temp, dir_fd=place.dir_fd)
        raise


def _exists(place: Place) -> InvalidInput:
    return InvalidInput(
        f"{place.shown} already exists; choose another name or allow replacing it "
        "(overwrite=true; --force on the CLI)"
    )


def _check_replaceable(place: Place, overwrite: bool, before_replace: Callable[[Place], None] | None) -> None:
    kind = place.kind()
    if kind == "symlink":
        raise PathRefused(
            f"{place.shown} is a symlink: symlinks are not followed inside the export directory"
        )
    if kind == "dir":
        raise InvalidInput(f"{place.shown} is a directory")
    if kind == "special":
        raise InvalidInput(
            f"{place.shown} is not a regular file (a device, pipe or socket) and is never replaced; "
            "to write the export to standard output use - (CLI)"
        )
    if kind == "file":
        if not overwrite:
            raise _exists(place)
        if before_replace is not None:
            before_replace(place)


def _commit(place: Place, temp: str, overwrite: bool) -> None:
    fd = place.dir_fd
    try:
        if overwrite:
            if place.kind() in ("dir", "special", "symlink"):  # appeared while we were writing
                _check_replaceable(place, overwrite, None)
            os.rename(temp, place.name, src_dir_fd=fd, dst_dir_fd=fd)
        else:
            try:  # a hard link never replaces: the name is taken atomically or refused
                os.link(temp, place.name, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
            except FileExistsError as exc:
                raise _exists(place) from exc
            except OSError as exc:
                if exc.errno not in _NO_LINKS:
                    raise
                if place.kind() is not None:
                    raise _exists(place) from exc
                os.rename(temp, place.name, src_dir_fd=fd, dst_dir_fd=fd)
            else:
                os.unlink(temp, dir_fd=fd)
    except OSError as exc:
        if exc.errno == errno.ENOENT:  # the temp file or its folder was removed by another process
            raise _changed(place.shown) from exc
        raise file_error(exc, place.shown, "write") from exc
    # Make the rename itself durable; some file systems cannot fsync a directory (the data is synced).
    with suppress(OSError):
        os.fsync(fd)
