"""``cpersona register claude-code|codex --hooks / --policy / --remove-hooks``: the hooks, skill and policy.

The plain-Python parts live in cpersona/hosts (hooks_file.py, skill.py); this module parses the
flags, binds the one agent_id, prints what was written and where.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from cpersona.config import Settings
from cpersona.hooks.wire import AGENT_VARIABLE
from cpersona.hosts.hooks_file import HOOK_HOSTS

__all__ = ["HOOK_HOSTS", "add_hook_arguments", "apply_hooks", "bind_agent", "hooks_usage_error"]

EXIT_OK = 0
EXIT_REFUSED = 1


def add_hook_arguments(register: argparse.ArgumentParser) -> None:
    """The hook flags of ``register``."""
    group = register.add_argument_group("host hooks, skill and policy (claude-code, codex)")
    group.add_argument(
        "--hooks",
        action="store_true",
        help="also install the host hooks (session start, each prompt, before compaction) and the agent skill",
    )
    group.add_argument(
        "--policy",
        action="store_true",
        help="also write the memory-policy block into ~/.claude/CLAUDE.md or ~/.codex/AGENTS.md "
        "(a marked block; a rerun replaces it)",
    )
    group.add_argument(
        "--agent-id",
        help="the agent_id the hooks, the skill and the server use (default: the host's name)",
    )
    group.add_argument(
        "--capture-prompts",
        action="store_true",
        help="with --hooks: store each user prompt verbatim (msg_id from session and prompt; off by default)",
    )
    group.add_argument(
        "--remove-hooks",
        action="store_true",
        help="remove our hooks, the skill and the policy block (other hooks and text stay)",
    )


def hooks_usage_error(args: argparse.Namespace) -> str | None:
    """Why these flags cannot be used together, or None."""
    wanted = args.hooks or args.policy or args.remove_hooks or args.capture_prompts or args.agent_id
    if wanted and args.host not in HOOK_HOSTS:
        return f"--hooks, --policy, --agent-id and --remove-hooks apply to {' and '.join(HOOK_HOSTS)} only"
    if args.capture_prompts and not args.hooks:
        return "--capture-prompts goes with --hooks"
    if args.remove_hooks and (args.hooks or args.policy):
        return "--remove-hooks cannot be combined with --hooks or --policy"
    if args.agent_id is not None and (not args.agent_id.strip() or args.agent_id != args.agent_id.strip()):
        return "--agent-id must be non-empty, without leading or trailing spaces"
    return None


def agent_id_of(args: argparse.Namespace) -> str:
    """The agent_id to bind."""
    return str(args.agent_id or args.host)


def bind_agent(payload: dict[str, Any], args: argparse.Namespace) -> None:
    """Put the agent_id into the server entry's env (kept sorted like the rest)."""
    env = dict(payload["env"])
    env[AGENT_VARIABLE] = agent_id_of(args)
    payload["env"] = dict(sorted(env.items()))


def _hook_settings(env: dict[str, str]) -> Settings:
    # The server runs with the host's environment plus the entry's env: the runtime directory
    # (XDG_RUNTIME_DIR) comes from the first, the database from the second.
    return Settings.from_env({**os.environ, **env})


def _say(change: str, what: str, path: Path, backup: Path | None = None) -> None:
    if change == "unchanged":
        print(f"{path} already has {what}; nothing written")
    else:
        kept = f" (the old file is kept as {backup})" if backup else ""
        print(f"{change} {what} in {path}{kept}")


def apply_hooks(args: argparse.Namespace, env: dict[str, str]) -> int:
    """Write (or remove) the hooks, the skill and the policy block for ``args.host``; ``env`` is the
    server entry's (the hooks name the database and socket the server will run with)."""
    from cpersona.hooks.serving import database_location, hook_socket
    from cpersona.hosts.config_file import ConfigFileError
    from cpersona.hosts.hooks_file import HookBinding, hooks_path, install_hooks
    from cpersona.hosts.skill import (
        policy_path,
        remove_policy,
        skill_path,
        skill_text,
        write_policy,
        write_text_if_changed,
    )

    host = args.host
    if not (args.hooks or args.policy or args.remove_hooks):
        return EXIT_OK
    try:
        if args.remove_hooks:
            target, change, backup = install_hooks(hooks_path(host), host, None)
            _say(change, "no cpersona hooks" if change == "unchanged" else "cpersona hooks", target, backup)
            skill = skill_path(host)
            if skill.exists():
                skill.unlink()
                print(f"removed the skill {skill}")
            print(f"{remove_policy(policy_path(host))} the policy block in {policy_path(host)}")
            return EXIT_OK
        agent_id = agent_id_of(args)
        if args.hooks:
            hook_env = _hook_settings(env)
            log = Path.home() / ".cpersona" / "hooks.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            binding = HookBinding(
                agent_id=agent_id,
                database=database_location(hook_env),
                socket=hook_socket(hook_env),
                capture_prompts=bool(args.capture_prompts),
                log=log,
            )
            target, change, backup = install_hooks(hooks_path(host), host, binding)
            _say(change, f"the cpersona hooks (agent_id {agent_id!r})", target, backup)
            for event in ("session-start", "prompt", "pre-compact"):
                print(f"  {event:<13} {binding.command(host, event)}")
            skill = skill_path(host)
            _say(write_text_if_changed(skill, skill_text(agent_id)), "the agent skill", skill)
        if args.policy:
            policy = policy_path(host)
            _say(write_policy(policy, agent_id), "the memory-policy block", policy)
    except (ConfigFileError, OSError) as exc:
        print(f"cpersona register: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    return EXIT_OK
