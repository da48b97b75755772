"""``cpersona register HOST``: write (or print) the host's config entry for this installation.

HOST is claude-code, claude-desktop, cursor, mcp-json or codex (cpersona/hosts/locations.py says
where each keeps its file). ``--hooks`` / ``--policy`` (claude-code, codex) add the host hooks, the
agent skill and the memory-policy block (cpersona/cli/hooks_setup.py). The entry runs this installation's ``cpersona serve`` with the CPERSONA_*
env in force; the merge keeps every other server and key (cpersona/hosts/config_file.py).

Exit codes: 0 written, already up to date or printed; 1 the file was refused (not JSON, not
writable) and left untouched; 2 usage.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from cpersona.config import Settings, settings_table
from cpersona.hosts.locations import HOSTS

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2


def _add_json_line(name: str, entry: dict[str, object]) -> str:
    # Claude Code's own documented way to add the same entry (user scope), for a running Claude Code.
    return f"claude mcp add-json --scope user {shlex.quote(name)} {shlex.quote(json.dumps(entry))}"


def cmd_register(args: argparse.Namespace, settings: Settings) -> int:
    """Build the entry, then print it (--print) or merge it into the host's config file."""
    from cpersona.embed.model_hint import is_installed
    from cpersona.embed.registry import ManifestError, load_manifest
    from cpersona.hosts.config_file import ConfigFileError, register_entry
    from cpersona.hosts.entry import server_entry
    from cpersona.hosts.locations import RELOAD_HINTS, BadHome, config_path

    if not args.name.strip():
        print("cpersona register: --name must not be empty", file=sys.stderr)
        return EXIT_USAGE
    if args.project and args.host != "cursor":
        print(
            "cpersona register: --project applies to cursor only (mcp-json is always the project's file)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    from cpersona.cli.hooks_setup import HOOK_HOSTS, apply_hooks, bind_agent, hooks_usage_error

    usage = hooks_usage_error(args)
    if usage is not None:
        print(f"cpersona register: {usage}", file=sys.stderr)
        return EXIT_USAGE
    entry = server_entry(settings)
    payload = entry.as_json()
    if args.host in HOOK_HOSTS and (args.hooks or args.policy):
        bind_agent(payload, args)  # the one agent_id: the server's env and every hook command carry it
    try:
        path = Path(args.path).expanduser() if args.path else config_path(args.host, project=args.project)
    except BadHome as exc:
        print(f"cpersona register: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    notes = []
    if entry.left_out:
        notes.append(
            "left out of the entry: " + ", ".join(f"{k} ({why})" for k, why in entry.left_out.items())
        )
    if entry.secrets:
        notes.append(
            f"the entry holds a credential in plain text ({', '.join(entry.secrets)}): {path} and its "
            "backups are made private (mode 0600)"
        )
    if settings.embedding_mode == "onnx":
        try:
            manifest = load_manifest(settings.embedding_model)
            if not is_installed(manifest, settings.models_dir):
                notes.append(
                    f"model {settings.embedding_model} is not installed in {settings.models_dir}: the "
                    "server will search by keyword only until it is (`cpersona doctor` says what to do)"
                )
        except ManifestError as exc:
            notes.append(f"{exc}: the server will search by keyword only")

    from_file = sorted(
        row.var.name
        for row in settings_table()
        if settings.origins.get(row.attr, "").startswith("settings file")
    )
    if from_file:
        notes.append(
            f"{', '.join(from_file)} came from the settings file {settings.settings_file}; the server reads "
            "that file too, and the entry's env (like any environment) overrides it"
        )

    if args.print:
        if args.host == "codex":
            from cpersona.hosts.codex_config import server_table

            print(server_table(args.name, payload), end="")
        else:
            print(json.dumps({"mcpServers": {args.name: payload}}, indent=2, ensure_ascii=False))
        print(f"(printed only; without --print this entry is merged into {path})", file=sys.stderr)
        if args.host == "claude-code":
            print(f"(or let Claude Code add it: {_add_json_line(args.name, payload)})", file=sys.stderr)
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
        return EXIT_OK

    existed = path.parent.is_dir()
    if args.host == "codex":
        return _register_codex(args, path, payload, notes)
    try:
        result = register_entry(path, args.name, payload, private=bool(entry.secrets))
    except ConfigFileError as exc:
        print(f"cpersona register: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    if result.change == "unchanged":
        print(f"{result.path} already has this entry for {args.name!r}; nothing written")
    else:
        backup = f" (the old file is kept as {result.backup})" if result.backup else ""
        print(f"{result.change} server {args.name!r} in {result.path}{backup}")
    print(f"  command {shlex.join([payload['command'], *payload['args']])}")
    for key, value in payload["env"].items():
        print(f"  env     {key}={value}")
    if result.removed_env:
        print(f"  dropped from the old entry (not in force here): {', '.join(result.removed_env)}")
    if not existed and args.host == "claude-desktop" and not args.path:
        notes.append(f"{path.parent} did not exist: is Claude Desktop installed for this user?")
    for note in notes:
        print(f"note: {note}")
    code = apply_hooks(args, payload["env"]) if args.host in HOOK_HOSTS else EXIT_OK
    if result.change != "unchanged":
        print(f"next: {RELOAD_HINTS[args.host]}")
        if args.host == "claude-code":
            print(f"  (or, with Claude Code running: {_add_json_line(args.name, payload)})")
    return code


def _register_codex(args: argparse.Namespace, path: Path, payload: dict[str, Any], notes: list[str]) -> int:
    """Codex: the server table in config.toml (appended once), then the hooks, skill and policy."""
    from cpersona.cli.hooks_setup import apply_hooks
    from cpersona.hosts.codex_config import register_codex_server, server_table
    from cpersona.hosts.config_file import ConfigFileError
    from cpersona.hosts.locations import RELOAD_HINTS

    try:
        change, backup = register_codex_server(path, args.name, payload)
    except ConfigFileError as exc:
        print(f"cpersona register: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    if change == "present":
        print(
            f"{path} has its own [mcp_servers.{args.name}] (keys register does not write); left as it is. "
            "To change it, edit it to read:\n" + server_table(args.name, payload)
        )
    elif change == "unchanged":
        print(f"{path} already has this entry for {args.name!r}; nothing written")
    else:
        kept = f" (the old file is kept as {backup})" if backup else ""
        print(f"{change} server {args.name!r} in {path}{kept}")
    for note in notes:
        print(f"note: {note}")
    code = apply_hooks(args, payload["env"])
    if change in ("added", "updated"):
        print(f"next: {RELOAD_HINTS['codex']}")
    return code


def add_register_command(subparsers: argparse._SubParsersAction) -> None:
    """Register ``register`` on the main parser."""
    register = subparsers.add_parser(
        "register",
        help="add this installation to an MCP host's config (claude-code, claude-desktop, cursor, mcp-json, codex)",
        description="Write (or print) the host's config entry: this installation's absolute `cpersona` path, "
        "`serve`, and the CPERSONA_* env in force, merged into the host's file keeping its other servers "
        "(atomic write, backup of the old file; a file that is not JSON is refused and left untouched).",
    )
    register.add_argument("host", choices=HOSTS, help="which host's config to write")
    register.add_argument("--print", action="store_true", help="print the entry (JSON) instead of writing it")
    register.add_argument("--path", help="write this config file instead of the host's usual one")
    register.add_argument(
        "--name", default="cpersona", help="the server's name in the config (default cpersona)"
    )
    register.add_argument(
        "--project",
        action="store_true",
        help="cursor: the project's .cursor/mcp.json instead of ~/.cursor/mcp.json",
    )
    from cpersona.cli.hooks_setup import add_hook_arguments

    add_hook_arguments(register)
    register.set_defaults(func=cmd_register)
