"""The agent skill (SKILL.md) and the memory-policy block that ``register --hooks / --policy`` write.

Both hosts read skills in the Agent Skills format: a folder holding ``SKILL.md`` that starts with
YAML front matter (``name``, ``description``); Claude Code from ``~/.claude/skills/<name>/``,
Codex from ``~/.agents/skills/<name>/``. The policy block goes into the file each host always
loads (``~/.claude/CLAUDE.md``, ``~/.codex/AGENTS.md``) between two marker lines, so a second
run replaces the block in place and never adds another.
"""

from __future__ import annotations

import re
import stat
from pathlib import Path

from cpersona.core.atomic import atomic_text

SKILL_NAME = "cpersona-memory"
BEGIN = (
    "<!-- cpersona memory policy: begin (written by `cpersona register --policy`; a rerun replaces it) -->"
)
END = "<!-- cpersona memory policy: end -->"


def skill_path(host: str, home: Path | None = None) -> Path:
    """Where ``host`` finds the user's skill."""
    base = Path.home() if home is None else home
    if host == "claude-code":
        return base / ".claude" / "skills" / SKILL_NAME / "SKILL.md"
    if host == "codex":
        return base / ".agents" / "skills" / SKILL_NAME / "SKILL.md"
    raise ValueError(f"no skill location for host {host!r}")


def policy_path(host: str, home: Path | None = None) -> Path:
    """The instructions file ``host`` always loads for this user."""
    base = Path.home() if home is None else home
    if host == "claude-code":
        return base / ".claude" / "CLAUDE.md"
    if host == "codex":
        return base / ".codex" / "AGENTS.md"
    raise ValueError(f"no instructions file for host {host!r}")


def skill_text(agent_id: str) -> str:
    """The SKILL.md for an installation whose hooks and server are bound to ``agent_id``."""
    return f"""---
name: {SKILL_NAME}
description: Use the cpersona memory tools well - when to recall, store, supersede, archive an episode or reconstruct context, what an empty recall means, and which agent_id to pass. Use when a task builds on earlier sessions, when a decision or preference is made, or before the conversation is compacted or ends.
---

# Working with cpersona memory

Your memories live in the cpersona MCP server under one agent_id: **`{agent_id}`**. Pass
`agent_id="{agent_id}"` to every cpersona tool. Rows are isolated per agent, so another id (a
guess, a project name, a model name) reads someone else's memories or nothing.

## Recall before acting on earlier work
- Call `recall` with the user's words when the task refers to something decided, built or said
  before. The hooks already inject the best matches for each prompt when any pass the relevance
  gate; call `recall` yourself for a narrower question or more rows.
- An empty `results` list means nothing stored is relevant enough: it is an answer, not an
  error. Do not retry with a different agent_id; ask the user or proceed.
- Use `reconstruct` when you need the story around a topic (what replaced what, linked rows).

## Store what will matter next session
- One decision, fact or preference per `store` call, written so it reads on its own
  ("We chose PostgreSQL 16 for billing because ..."), not "as discussed above".
- When a new memory replaces an old one, store it with `supersedes=["mem:<id>"]` so recall
  stops offering the old one; never store a contradiction beside it.
- Duplicates are skipped, not overwritten: a `skipped` result is fine.

## Archive before the context goes
- Before the conversation is compacted or the session ends, call `archive_episode` with your own
  summary: what was done, what was decided, what is still open. The server never summarises
  for you; after a compaction the hooks remind you.
- Keep the standing profile short and current with `get_profile` / `update_profile`.
"""


def policy_block(agent_id: str) -> str:
    """The marked block for CLAUDE.md / AGENTS.md."""
    return f"""{BEGIN}
## Memory (cpersona)
- Memory tools: the `cpersona` MCP server. Always pass agent_id="{agent_id}"; never guess another.
- Recall before acting on earlier work; an empty recall means nothing relevant is stored.
- Store each decision, fact or preference as one self-contained memory; use supersedes= to replace one.
- Before compaction or the end of a session, archive_episode your own summary of the work and what is open.
{END}
"""


_BLOCK = re.compile(re.escape(BEGIN.split(" (")[0]) + r".*?" + re.escape(END) + r"\n?", re.DOTALL)


def write_text_if_changed(path: Path, text: str) -> str:
    """Write ``text`` atomically unless the file already holds it: "added" | "updated" | "unchanged"."""
    try:
        old = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        old = None
    if old == text:
        return "unchanged"
    path.parent.mkdir(parents=True, exist_ok=True)
    # An instructions file is not secret: keep the old file's mode, a new one gets rw-r--r--.
    mode = stat.S_IMODE(path.stat().st_mode) if old is not None else 0o644
    with atomic_text(path, mode=mode) as handle:
        handle.write(text)
    return "added" if old is None else "updated"


def write_policy(path: Path, agent_id: str) -> str:
    """Put the policy block into ``path``, replacing an earlier one: "added" | "updated" | "unchanged"."""
    try:
        old = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        old = ""
    block = policy_block(agent_id)
    if _BLOCK.search(old):
        new = _BLOCK.sub(lambda _: block, old, count=1)
    else:
        new = old + ("\n" if old and not old.endswith("\n") else "") + ("\n" if old else "") + block
    return write_text_if_changed(path, new)


def remove_policy(path: Path) -> str:
    """Take the policy block out of ``path``: "removed" | "found no". The rest of the file stays."""
    try:
        old = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return "found no"
    # The blank line write_policy put before the block goes with it.
    new = re.sub(r"(?:(?<=\n)\n)?" + _BLOCK.pattern, "", old, count=1, flags=re.DOTALL)
    if new == old:
        return "found no"
    write_text_if_changed(path, new)
    return "removed"
