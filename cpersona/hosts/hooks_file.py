"""Host hooks in the host's own settings file: where, which events, the exact commands, the merge.

- Claude Code reads hooks from ``~/.claude/settings.json`` (user scope; ``.claude/settings.json``
  in a project); Codex from ``~/.codex/hooks.json`` (or ``<repo>/.codex/hooks.json``). Both use
  ``{"hooks": {EVENT: [{"matcher"?, "hooks": [{"type": "command", "command", "timeout"}]}]}}``.
- Each command is ``<this Python> -S <installed cpersona>/hooks/launch.py HOST EVENT …`` (``-S``:
  no ``site`` start-up on every prompt; cpersona/hooks/launch.py says why).
- Ours are recognised by their command (``cpersona/hooks/launch.py``, or ``-m cpersona.hooks``
  written by hand): a run replaces ours and keeps
  every other hook, group and key; a second run with the same settings changes nothing. The
  file is written through ``config_file.update_config`` (backup, atomic, mode kept).

Sources for every field: docs/hosts-claude-code.md and docs/hosts-codex.md.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cpersona.hosts.config_file import ConfigFileError, update_config

HOOK_HOSTS = ("claude-code", "codex")
#: The marker in a command that makes a hook ours.
#: The launcher every command we write runs (beside cpersona/hooks/run.py in this installation).
LAUNCHER = str(Path(__file__).resolve().parent.parent / "hooks" / "launch.py")
_OURS = (os.path.join("cpersona", "hooks", "launch.py"), "-m cpersona.hooks")
#: Our event -> (the host's event, seconds the host waits before it kills the hook).
HOOK_EVENTS = {
    "session-start": ("SessionStart", 10),
    "prompt": ("UserPromptSubmit", 5),
    "pre-compact": ("PreCompact", 5),
}


def hooks_path(host: str, *, home: Path | None = None, project_dir: Path | None = None) -> Path:
    """The file ``host`` reads hooks from: the user's, or ``project_dir``'s when given."""
    base = project_dir if project_dir is not None else (Path.home() if home is None else home)
    if host == "claude-code":
        return base / ".claude" / "settings.json"
    if host == "codex":
        return base / ".codex" / "hooks.json"
    raise ValueError(f"no hooks for host {host!r}; hosts with hooks: {', '.join(HOOK_HOSTS)}")


@dataclass(frozen=True)
class HookBinding:
    """What every hook command of one registration carries (the one agent_id, the one database)."""

    agent_id: str
    database: str  # absolute SQLite path or PostgreSQL URL (hooks/serving.database_location)
    socket: Path  # the server's hook socket (hooks/serving.hook_socket)
    capture_prompts: bool = False
    log: Path | None = None
    python: str = sys.executable
    launcher: str = LAUNCHER

    def command(self, host: str, event: str) -> str:
        """The exact shell command the host runs for ``event``."""
        argv = [
            self.python,
            "-S",
            self.launcher,
            host,
            event,
            "--agent-id",
            self.agent_id,
            "--db",
            self.database,
            "--socket",
            str(self.socket),
        ]
        if self.capture_prompts and event == "prompt":
            argv.append("--capture-prompts")
        if self.log is not None:
            argv += ["--log", str(self.log)]
        return shlex.join(argv)

    def entries(self, host: str) -> dict[str, dict[str, Any]]:
        """The host's event name -> our matcher group for it."""
        return {
            name: {"hooks": [{"type": "command", "command": self.command(host, event), "timeout": timeout}]}
            for event, (name, timeout) in HOOK_EVENTS.items()
        }


def _is_ours(hook: Any) -> bool:
    return isinstance(hook, dict) and any(mark in str(hook.get("command") or "") for mark in _OURS)


def is_ours(command: str) -> bool:
    """True for a hook command we write (what a second run replaces and --remove-hooks removes)."""
    return _is_ours({"command": command})


def merge_hooks(data: dict[str, Any], ours: dict[str, dict[str, Any]] | None) -> tuple[dict[str, Any], str]:
    """(new settings, "added" | "updated" | "removed" | "unchanged") with ``ours`` in place of our old
    hooks (``None``: remove ours). Other hooks and groups stay where they are."""
    hooks = data.get("hooks")
    if hooks is None:
        hooks = {}
    if not isinstance(hooks, dict):
        raise ConfigFileError('"hooks" is not an object; left untouched')
    new_hooks: dict[str, Any] = {}
    had_ours = False
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            new_hooks[event] = groups
            continue
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                inner = [h for h in group["hooks"] if not _is_ours(h)]
                if len(inner) != len(group["hooks"]):
                    had_ours = True
                    if not inner:
                        continue  # a group that held only ours goes with them
                    group = {**group, "hooks": inner}
            kept.append(group)
        if kept or not groups:  # an event left empty by removing ours goes too; one empty before stays
            new_hooks[event] = kept
    for event, group in (ours or {}).items():
        new_hooks[event] = [*new_hooks.get(event, []), group]
    merged = dict(data)
    if new_hooks or "hooks" in data:
        merged["hooks"] = new_hooks
    if merged == data:
        return data, "unchanged"
    if ours is None:
        return merged, "removed"
    return merged, "updated" if had_ours else "added"


def install_hooks(path: Path, host: str, binding: HookBinding | None) -> tuple[Path, str, Path | None]:
    """Merge our hooks for ``host`` into ``path`` (``binding`` None removes them): (file, change, backup)."""
    ours = binding.entries(host) if binding is not None else None
    return update_config(path, lambda data: merge_hooks(data, ours))
