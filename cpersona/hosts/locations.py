"""Where each MCP host keeps the config file that lists its servers (docs/decisions.md, "register").

- Claude Desktop: ``claude_desktop_config.json`` in the app's folder: macOS
  ``~/Library/Application Support/Claude/``, Windows ``%APPDATA%\\Claude\\``, Linux
  ``$XDG_CONFIG_HOME/Claude/`` (default ``~/.config/Claude/``).
- Claude Code: ``~/.claude.json``, whose top-level ``mcpServers`` is the user scope
  (``claude mcp add-json --scope user`` writes the same place).
- Cursor: ``~/.cursor/mcp.json`` (global) or ``.cursor/mcp.json`` in the project.
- ``mcp-json``: ``.mcp.json`` in the project (the shared project file Claude Code and others read).
- Codex: ``~/.codex/config.toml`` (TOML, ``[mcp_servers.<name>]``; cpersona/hosts/codex_config.py).
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from pathlib import Path

HOSTS = ("claude-code", "claude-desktop", "cursor", "mcp-json", "codex")

#: What a person does after the file was written so the host starts the server.
RELOAD_HINTS = {
    "claude-desktop": "quit Claude Desktop completely and open it again to load the server",
    "claude-code": "start a new Claude Code session (`claude mcp list` shows the server); if Claude Code "
    "was running, quit it first or it may write its own copy of ~/.claude.json over this one",
    "cursor": "Cursor loads the server on its next start (or reload the window / toggle it under MCP settings)",
    "codex": "start a new Codex session (`codex mcp list` shows the server; Codex asks once to trust new hooks)",
    "mcp-json": "hosts that read the project's .mcp.json start the server in this folder "
    "(Claude Code asks once to approve project servers)",
}


class UnknownHost(ValueError):
    """The host name is not one of ``HOSTS``."""


class BadHome(ValueError):
    """HOME is empty or relative: the home folder's config files cannot be placed."""


def home_folder(env: Mapping[str, str] | None = None) -> Path:
    """The home folder, absolute. An empty HOME (which Python reads as ``/``) or a relative one
    (which would be read against the current folder) is refused: the host never looks there."""
    e = os.environ if env is None else env
    if os.name != "nt" and "HOME" in e:
        raw = e["HOME"]
        if not raw.strip() or not os.path.isabs(raw):
            raise BadHome(
                f"HOME is {raw!r}, not an absolute folder: set it to your home folder, or pass --path"
            )
    home = Path.home()
    if not home.is_absolute():
        raise BadHome(f"the home folder {str(home)!r} is not absolute: set HOME, or pass --path")
    return home


def config_path(
    host: str,
    *,
    project_dir: Path | None = None,
    project: bool = False,
    system: str | None = None,
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> Path:
    """The config file ``host`` reads on this machine.

    ``project`` picks Cursor's project file over its global one; ``project_dir`` (default the
    current directory) is where the project files live. ``system`` (``platform.system()``),
    ``env`` and ``home`` default to this machine's; tests pass others to check every OS.
    """
    e = os.environ if env is None else env
    home_dir = home_folder(e) if home is None else home
    where = Path.cwd() if project_dir is None else project_dir
    if host == "claude-desktop":
        return _claude_desktop_dir(system or platform.system(), e, home_dir) / "claude_desktop_config.json"
    if host == "claude-code":
        return home_dir / ".claude.json"
    if host == "cursor":
        return (where if project else home_dir) / ".cursor" / "mcp.json"
    if host == "mcp-json":
        return where / ".mcp.json"
    if host == "codex":
        return home_dir / ".codex" / "config.toml"
    raise UnknownHost(f"unknown host {host!r}; known hosts: {', '.join(HOSTS)}")


def _claude_desktop_dir(system: str, env: Mapping[str, str], home: Path) -> Path:
    if system == "Darwin":
        return home / "Library" / "Application Support" / "Claude"
    if system == "Windows":
        appdata = env.get("APPDATA") or str(home / "AppData" / "Roaming")
        return Path(appdata) / "Claude"
    xdg = env.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".config"
    return base / "Claude"
