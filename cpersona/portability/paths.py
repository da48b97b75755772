"""Path confinement for export/import files (SPEC §5 "Portability").

MCP tools may only read and write files under the export directory
(``CPERSONA_EXPORT_DIR``, default ``<db dir>/exports``, created on first use).
A relative path is taken relative to that directory; an absolute path must
already lie inside it. Any ``..`` component is refused outright, and the path
is resolved (symlinks followed) before the containment check, so a symlink
pointing out of the directory is refused too. The operator CLI is not
confined: it passes ``confined=False`` and the path is used as given.
"""

from __future__ import annotations

from pathlib import Path, PurePath

from cpersona.config import Settings
from cpersona.errors import CPersonaError


class PathRefused(CPersonaError):
    """An export/import path points outside the allowed export directory."""

    code = "path_refused"


def export_root(settings: Settings) -> Path:
    """The directory MCP export/import paths are confined to."""
    return (settings.export_dir or settings.db_path.parent / "exports").expanduser()


def resolve_path(settings: Settings, requested: str, *, confined: bool) -> Path:
    """The file ``requested`` names, checked against the export directory when ``confined``.

    Raises ``PathRefused`` (error_code ``path_refused``) with the reason.
    """
    if not isinstance(requested, str) or not requested.strip():
        raise PathRefused("the path is empty")
    if "\x00" in requested:
        raise PathRefused("the path contains a NUL byte")
    given = Path(requested.strip()).expanduser() if not confined else Path(requested.strip())
    if not confined:
        return given.resolve()
    root = export_root(settings)
    if ".." in PurePath(requested).parts:
        raise PathRefused(f"'..' is not allowed in export/import paths; use a path inside {root}")
    root.mkdir(parents=True, exist_ok=True)
    real_root = root.resolve()
    candidate = given if given.is_absolute() else root / given
    real = candidate.resolve()  # follows symlinks of every existing component
    if real == real_root or not real.is_relative_to(real_root):
        why = "a symlink leads" if candidate.absolute() != real and _inside(candidate, root) else "it is"
        raise PathRefused(
            f"{requested!r} is refused: {why} outside the export directory {real_root} "
            "(CPERSONA_EXPORT_DIR); give a file name relative to it"
        )
    return real


def _inside(candidate: Path, root: Path) -> bool:
    try:
        return candidate.absolute().is_relative_to(root.absolute())
    except ValueError:
        return False
