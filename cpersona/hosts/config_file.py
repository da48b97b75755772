"""Merging a server entry into a host's JSON config file without losing anything else in it.

Read the file (absent or blank = an empty config), refuse one that is not a JSON object or
whose ``mcpServers`` is not an object (never overwrite what we cannot read), put the entry
under ``mcpServers[name]`` keeping every other server, every other top-level key and the
entry's own other keys (e.g. ``disabled``), and write only when something changed: first a
copy of the old file beside it (``<file>.<UTC time>.bak``), then the new text atomically
(cpersona/core/atomic.py), with the old file's permission bits. A symlinked config (dotfiles) is
written through to its target.

Refused, with nothing written (``ConfigFileError``): a read-only file (no write bit: it was made so
on purpose, and root could replace it anyway), a config nested deeper than ``MAX_CONFIG_DEPTH``,
and a symlink whose target's folder does not exist (no folders are made through a dangling link).
An entry holding a credential (``private``) makes the file and its backup 0600, new or not.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cpersona.core.atomic import atomic_text

SERVERS_KEY = "mcpServers"
#: Deeper JSON than any host writes (theirs is a few levels): refused cleanly, never a RecursionError.
MAX_CONFIG_DEPTH = 64
#: Keys of an old entry that describe another kind of server (a URL one): dropped when it becomes ours.
_OTHER_TRANSPORT_KEYS = ("url", "headers", "serverUrl")


class ConfigFileError(RuntimeError):
    """The config file cannot be used as it is; it was left untouched."""


@dataclass(frozen=True)
class RegisterResult:
    """What ``register_entry`` did."""

    path: Path  # the file written (a symlink's target)
    change: str  # "added" | "updated" | "unchanged"
    backup: Path | None  # the copy of the old file, when one was replaced
    removed_env: list[str]  # CPERSONA_* variables the old entry had and the new one does not


def read_config(path: Path) -> dict[str, Any]:
    """The file's JSON object; {} when it does not exist or is blank; ConfigFileError otherwise."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8-sig")  # editors on Windows may write a byte-order mark
    except UnicodeDecodeError as exc:
        raise ConfigFileError(f"{path} is not UTF-8 text (byte {exc.start}); left untouched") from exc
    if not text.strip():
        return {}
    if _depth_exceeds(text, MAX_CONFIG_DEPTH):
        raise ConfigFileError(
            f"{path} nests JSON deeper than {MAX_CONFIG_DEPTH} levels, which no host config does; left untouched"
        )
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigFileError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); left untouched. "
            "Repair it (or pass --path to write another file, --print to see the entry)"
        ) from exc
    if not isinstance(data, dict):
        raise ConfigFileError(
            f"{path} holds JSON that is not an object ({type(data).__name__}); left untouched"
        )
    if SERVERS_KEY in data and not isinstance(data[SERVERS_KEY], dict):
        raise ConfigFileError(f'{path}: "{SERVERS_KEY}" is not an object; left untouched')
    return data


def _depth_exceeds(text: str, limit: int) -> bool:
    """Whether brackets outside strings nest deeper than ``limit`` (read before parsing, so a deep
    file is refused without recursion)."""
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
    return False


def merge_entry(
    data: dict[str, Any], name: str, entry: dict[str, Any]
) -> tuple[dict[str, Any], str, list[str]]:
    """(new config, "added" | "updated" | "unchanged", CPERSONA_* env names dropped) for ``entry`` as ``name``.

    The old entry's own other keys stay; its env keeps variables that are not CPERSONA_* (the
    person's own, e.g. HF_HUB_OFFLINE) and takes the CPERSONA_* ones from ``entry``.
    """
    servers: dict[str, Any] = dict(data.get(SERVERS_KEY) or {})
    old = servers.get(name)
    removed: list[str] = []
    if isinstance(old, dict):
        new = {k: v for k, v in old.items() if k not in _OTHER_TRANSPORT_KEYS}
        if new.get("type") not in (None, "stdio"):
            del new["type"]
        raw_env = old.get("env")
        old_env: dict[str, Any] = raw_env if isinstance(raw_env, dict) else {}
        kept = {k: v for k, v in old_env.items() if not k.startswith("CPERSONA_")}
        removed = sorted(k for k in old_env if k.startswith("CPERSONA_") and k not in entry.get("env", {}))
        new.update(entry)
        new["env"] = {**kept, **entry.get("env", {})}
    else:
        new = dict(entry)
    change = "unchanged" if old == new else ("updated" if name in servers else "added")
    servers[name] = new
    merged = dict(data)
    merged[SERVERS_KEY] = servers  # an existing key keeps its place in the file
    return merged, change, removed


def _backup_path(target: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    candidate = target.with_name(f"{target.name}.{stamp}.bak")
    n = 1
    while candidate.exists():
        candidate = target.with_name(f"{target.name}.{stamp}-{n}.bak")
        n += 1
    return candidate


def _new_file_mode(private: bool) -> int:
    if private:
        return 0o600
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def register_entry(path: Path, name: str, entry: dict[str, Any], *, private: bool = False) -> RegisterResult:
    """Merge ``entry`` as server ``name`` into the config file at ``path`` (see the module docstring).

    ``private``: the entry holds a credential, so the file (new or not) and its backup get mode 0600
    instead of the umask's default or the old file's bits.
    Raises ConfigFileError, with the file untouched, when it cannot be read as a config or written.
    """
    removed: list[str] = []

    def change(data: dict[str, Any]) -> tuple[dict[str, Any], str]:
        merged, what, dropped = merge_entry(data, name, entry)
        removed.extend(dropped)
        return merged, what

    target, what, backup = update_config(path, change, private=private)
    return RegisterResult(target, what, backup, removed)


def update_config(
    path: Path,
    change: Callable[[dict[str, Any]], tuple[dict[str, Any], str]],
    *,
    private: bool = False,
) -> tuple[Path, str, Path | None]:
    """Apply ``change`` (config -> (new config, "added" | "updated" | "unchanged" | ...)) to the JSON
    file at ``path``: (the file written, the change, the backup of the old file or None).

    Nothing is written when the change is "unchanged"; otherwise the old file is copied beside it
    first and the new text written atomically with the old file's mode (the server entry and the
    host hooks share this). Raises ConfigFileError, with the file untouched, when it cannot be
    read as a config or written.
    """
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    if target != path and not target.parent.is_dir():
        raise ConfigFileError(
            f"{path} is a symlink to {target}, whose folder does not exist; left untouched "
            "(create the folder, or pass --path)"
        )
    data = read_config(target)
    before = target.stat() if target.exists() else None
    if before is not None and not before.st_mode & 0o222:
        raise ConfigFileError(
            f"{target} is read-only (mode {stat.S_IMODE(before.st_mode):04o}); left untouched. "
            "Make it writable to register, or pass --print"
        )
    merged, what = change(data)
    if what == "unchanged":
        if private:  # written before the credential was recognised: still world-readable
            _make_private(target)
        return target, what, None
    backup: Path | None = None
    try:
        if before is not None:
            backup = _backup_path(target)
            _copy(target, backup, private)
            mode = 0o600 if private else stat.S_IMODE(before.st_mode)
        else:
            mode = _new_file_mode(private)
            target.parent.mkdir(parents=True, exist_ok=True)
        now = target.stat() if target.exists() else None
        if (before is None) != (now is None) or (
            before is not None
            and now is not None
            and (before.st_mtime_ns, before.st_size) != (now.st_mtime_ns, now.st_size)
        ):
            raise ConfigFileError(
                f"{target} changed while it was being updated; left as it is now: run again"
            )
        with atomic_text(target, mode=mode) as handle:
            json.dump(merged, handle, indent=2, ensure_ascii=False)
            handle.write("\n")
    except OSError as exc:
        raise ConfigFileError(
            f"cannot write {target}: {exc.strerror or exc}; the old file is unchanged"
        ) from exc
    if private:
        _make_private(target)
    return target, what, backup


def _copy(source: Path, backup: Path, private: bool) -> None:
    """The backup; a private one is created 0600 before a byte is written (the old text may hold
    the same credential), never copied open and narrowed afterwards."""
    if not private:
        shutil.copy2(source, backup)
        return
    fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out, source.open("rb") as old:
        shutil.copyfileobj(old, out)
    shutil.copystat(source, backup)
    os.chmod(backup, 0o600)


def _make_private(target: Path) -> None:
    """Mode 0600 on the config and on every backup of it (``<file>.*.bak``) that is wider."""
    for path in [target, *target.parent.glob(f"{target.name}.*.bak")]:
        with contextlib.suppress(OSError):
            if stat.S_IMODE(path.stat().st_mode) & 0o077:
                os.chmod(path, 0o600)
