"""Safe extraction of model archives for ``fetch-model --from``.

Archives come from users and other machines, so every member is checked
before anything is written: no absolute paths, no ``..``, no links or device
files, nothing that would land outside the destination.
"""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path, PurePosixPath

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip", ".tar.bz2", ".tar.xz")


class UnsafeArchiveError(ValueError):
    """An archive member would be written outside the destination or is not a plain file."""


def is_archive(path: Path) -> bool:
    """Whether ``path`` names a supported archive (by suffix)."""
    return path.is_file() and path.name.lower().endswith(ARCHIVE_SUFFIXES)


def _safe_relpath(name: str) -> PurePosixPath:
    # Zip names may use backslashes when made on Windows; treat them as separators.
    rel = PurePosixPath(name.replace("\\", "/"))
    if rel.is_absolute() or (rel.parts and rel.parts[0].endswith(":")):
        raise UnsafeArchiveError(f"archive member {name!r} has an absolute path")
    if any(part == ".." for part in rel.parts):
        raise UnsafeArchiveError(f"archive member {name!r} escapes the destination")
    return rel


def _check_inside(dest: Path, rel: PurePosixPath, name: str) -> Path:
    target = (dest / rel).resolve()
    if target != dest and dest not in target.parents:
        raise UnsafeArchiveError(f"archive member {name!r} escapes the destination")
    return target


def _extract_tar(archive: Path, dest: Path) -> None:
    with tarfile.open(archive, "r:*") as tar:
        members = tar.getmembers()
        for member in members:
            rel = _safe_relpath(member.name)
            _check_inside(dest, rel, member.name)
            if not (member.isfile() or member.isdir()):
                raise UnsafeArchiveError(f"archive member {member.name!r} is a link or special file")
        # The "data" filter repeats these checks inside tarfile and strips unsafe modes.
        tar.extractall(dest, members=members, filter="data")


def _extract_zip(archive: Path, dest: Path) -> None:
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            rel = _safe_relpath(info.filename)
            target = _check_inside(dest, rel, info.filename)
            mode = (info.external_attr >> 16) & 0o170000
            if mode == 0o120000:  # a symlink stored by Info-ZIP
                raise UnsafeArchiveError(f"archive member {info.filename!r} is a link")
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, target.open("wb") as out:
                while chunk := src.read(4 * 1024 * 1024):
                    out.write(chunk)


def extract_archive(archive: Path, dest: Path) -> Path:
    """Extract ``archive`` into the existing directory ``dest``; return ``dest``.

    Raises UnsafeArchiveError for hostile members, tarfile/zipfile errors for
    damaged archives.
    """
    dest = dest.resolve()
    name = archive.name.lower()
    if name.endswith(".zip"):
        _extract_zip(archive, dest)
    else:
        _extract_tar(archive, dest)
    return dest
