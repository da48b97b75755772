"""Codex's server entry: a ``[mcp_servers.<name>]`` table in ``~/.codex/config.toml``.

Codex keeps its MCP servers in TOML, not JSON. Rewriting a whole TOML file would need a TOML
writer that keeps the person's comments and layout, which the standard library lacks; so only our
table's own lines are written: appended when the file has no table of that name, replaced in place
when it has one that holds only ``command`` / ``args`` / ``env`` (what register writes), and the
result is parsed again and must differ from the old file in that table alone. Anything else (a
table with keys of the person's own, an inline or dotted definition) is left alone and reported,
with the table to paste. A file that is not TOML is refused.
"""

from __future__ import annotations

import json
import re
import shutil
import stat
import tomllib
from pathlib import Path
from typing import Any

from cpersona.core.atomic import atomic_text
from cpersona.hosts.config_file import ConfigFileError, _backup_path


def codex_config_path(home: Path | None = None) -> Path:
    """Codex's user config file."""
    return (Path.home() if home is None else home) / ".codex" / "config.toml"


def _quoted(value: str) -> str:
    # A JSON string is a valid TOML basic string (same escapes), non-ASCII kept as is.
    return json.dumps(value, ensure_ascii=False)


def server_table(name: str, entry: dict[str, Any]) -> str:
    """The TOML table for ``entry`` (``{"command", "args", "env"}``)."""
    key = name if name.replace("-", "").replace("_", "").isalnum() else _quoted(name)
    lines = [
        f"[mcp_servers.{key}]",
        f"command = {_quoted(entry['command'])}",
        "args = [" + ", ".join(_quoted(a) for a in entry["args"]) + "]",
    ]
    env = entry.get("env") or {}
    if env:
        lines.append("env = { " + ", ".join(f"{k} = {_quoted(v)}" for k, v in env.items()) + " }")
    return "\n".join(lines) + "\n"


def _replace_table(text: str, name: str, table: str) -> str | None:
    """``text`` with the ``[mcp_servers.<name>]`` table's lines replaced by ``table``, or None when
    the table is not written as one plain header we can find."""
    header = re.compile(
        rf'^\s*\[\s*mcp_servers\s*\.\s*("{re.escape(name)}"|{re.escape(name)})\s*\]\s*(#.*)?$'
    )
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if header.match(line.rstrip("\n"))]
    if len(starts) != 1:
        return None
    start = end = starts[0]
    end += 1
    while end < len(lines) and not lines[end].lstrip().startswith("["):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():  # keep the blank lines before the next table
        end -= 1
    return "".join(lines[:start]) + table + "".join(lines[end:])


def register_codex_server(path: Path, name: str, entry: dict[str, Any]) -> tuple[str, Path | None]:
    """Write the server table into ``path``: ("added" | "updated" | "unchanged" | "present", backup);
    "present": a table of that name we do not rewrite (see the module docstring)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(f"cannot read {path}: {exc}") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"{path} is not valid TOML ({exc}); left untouched") from exc
    servers = data.get("mcp_servers")
    table = server_table(name, entry)
    wanted = {k: v for k, v in entry.items() if k != "env" or v}
    if isinstance(servers, dict) and name in servers:
        old = servers[name]
        if old == wanted:
            return "unchanged", None
        new_text = _replace_table(text, name, table) if set(old) <= {"command", "args", "env"} else None
        if new_text is None or not _only_ours_changed(data, new_text, name, wanted):
            return "present", None
        return "updated", _write(path, new_text)
    separator = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
    return "added", _write(path, text + separator + table)


def _only_ours_changed(data: dict[str, Any], new_text: str, name: str, wanted: dict[str, Any]) -> bool:
    try:
        new = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError:
        return False
    others_old = {**data, "mcp_servers": {k: v for k, v in data["mcp_servers"].items() if k != name}}
    others_new = {**new, "mcp_servers": {k: v for k, v in new.get("mcp_servers", {}).items() if k != name}}
    return others_old == others_new and new["mcp_servers"].get(name) == wanted


def _write(path: Path, text: str) -> Path | None:
    """Write ``text`` atomically after copying the old file beside it; the backup (None for a new file)."""
    backup = None
    try:
        if path.exists():
            backup = _backup_path(path)
            shutil.copy2(path, backup)
            mode = stat.S_IMODE(path.stat().st_mode)
        else:
            mode = 0o600
        with atomic_text(path, mode=mode) as handle:
            handle.write(text)
    except OSError as exc:
        raise ConfigFileError(
            f"cannot write {path}: {exc.strerror or exc}; the old file is unchanged"
        ) from exc
    return backup
