"""Running the hook command exactly as a host does: a shell command, the host's JSON on stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from cpersona.hooks.endpoint import socket_path
from cpersona.hosts.hooks_file import LAUNCHER


def claude_input(event: str, session: str = "sess-1", **fields: Any) -> dict[str, Any]:
    """What Claude Code sends (docs/hosts-claude-code.md): common fields plus the event's own."""
    names = {"session-start": "SessionStart", "prompt": "UserPromptSubmit", "pre-compact": "PreCompact"}
    data = {
        "session_id": session,
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": "/tmp",
        "permission_mode": "default",
        "hook_event_name": names[event],
    }
    if event == "session-start":
        data["source"] = "startup"
    if event == "pre-compact":
        data.update(trigger="auto", custom_instructions="")
    data.update(fields)
    return data


def hook_argv(
    event: str,
    *,
    db: Path,
    runtime: Path,
    agent: str = "alice",
    host: str = "claude-code",
    extra: tuple[str, ...] = (),
) -> list[str]:
    """The command ``register --hooks`` writes, for a database and runtime directory of the test's own."""
    return [
        sys.executable,
        "-S",
        LAUNCHER,
        host,
        event,
        "--agent-id",
        agent,
        "--db",
        str(db),
        "--socket",
        str(socket_path(runtime, str(db))),
        # Generous, so a loaded test machine does not turn an answer into a (correct) timeout; the tests
        # of the budget pass their own, which comes later and wins.
        "--budget",
        "30",
        *extra,
    ]


def run_hook(
    argv: list[str], stdin: bytes | str | dict[str, Any], timeout: float = 60
) -> subprocess.CompletedProcess[bytes]:
    """Run the hook; ``stdin`` a dict is sent as the host's JSON."""
    raw = json.dumps(stdin).encode() if isinstance(stdin, dict) else stdin
    raw = raw.encode() if isinstance(raw, str) else raw
    env = {k: v for k, v in os.environ.items() if not k.startswith("CPERSONA_")}
    env["CPERSONA_UPDATE_CHECK"] = "false"
    return subprocess.run(argv, input=raw, capture_output=True, timeout=timeout, env=env)


def injected(done: subprocess.CompletedProcess[bytes]) -> str | None:
    """The additionalContext the hook printed, or None when it printed nothing."""
    out = done.stdout.decode().strip()
    if not out:
        return None
    return str(json.loads(out)["hookSpecificOutput"]["additionalContext"])
