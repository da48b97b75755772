"""Codex's server entry: a ``[mcp_servers.<name>]`` table in ``~/.codex/config.toml``.

Codex keeps its MCP servers in TOML, not JSON. Rewriting a TOML file would need a TOML writer
that keeps the person's comments and layout, which the standard library lacks; so the table is
appended when the file has none of that name, and an existing one is left alone (reported, with
the table to paste). The file is read with ``tomllib`` first: a file that is not TOML is refused.
"""

from __future__ import annotations

import json
import shutil
import stat
import tomllib
from pathlib import Path
from typing import Any

from cpersona.atomic import atomic_text
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


def register_codex_server(path: Path, name: str, entry: dict[str, Any]) -> tuple[str, Path | None]:
    """Append the server table unless ``path`` has one named ``name``: ("added" | "present", backup)."""
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
    if isinstance(servers, dict) and name in servers:
        return "present", None
    backup = None
    try:
        if path.exists():
            backup = _backup_path(path)
            shutil.copy2(path, backup)
            mode = stat.S_IMODE(path.stat().st_mode)
        else:
            mode = 0o600
        separator = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
        with atomic_text(path, mode=mode) as handle:
            handle.write(text + separator + server_table(name, entry))
    except OSError as exc:
        raise ConfigFileError(
            f"cannot write {path}: {exc.strerror or exc}; the old file is unchanged"
        ) from exc
    return "added", backup
