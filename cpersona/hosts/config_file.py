"""Merging a server entry into a host's JSON config file without losing anything else in it.

Read the file (absent or blank = an empty config), refuse one that is not a JSON object or
whose ``mcpServers`` is not an object (never overwrite what we cannot read), put the entry
under ``mcpServers[name]`` keeping every other server, every other top-level key and the
entry's own other keys (e.g. ``disabled``), and write only when something changed: first a
copy of the old file beside it (``<file>.<UTC time>.bak``), then the new text atomically
(cpersona/atomic.py), with the old file's permission bits. A symlinked config (dotfiles) is
written through to its target.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cpersona.atomic import atomic_text

SERVERS_KEY = "mcpServers"
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

    ``private``: a new file gets mode 0600 (the entry holds a password) instead of the umask's default.
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
    data = read_config(target)
    before = target.stat() if target.exists() else None
    merged, what = change(data)
    if what == "unchanged":
        return target, what, None
    backup: Path | None = None
    try:
        if before is not None:
            backup = _backup_path(target)
            shutil.copy2(target, backup)
            mode = stat.S_IMODE(before.st_mode)
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
    return target, what, backup
