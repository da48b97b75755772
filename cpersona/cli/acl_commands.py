"""``cpersona acl add-client`` / ``cpersona acl list``: manage the HTTP ACL file (CPERSONA_ACL_FILE).

``add-client`` prints the new client's token once, on stdout, and stores only
its SHA-256; ``list`` shows names and grants, never a hash in full. The server
reads the file at start-up: restart it after a change.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cpersona.acl import AclError, add_client, load_acl, merge_grants
from cpersona.config import Settings

#: Hex digits of a token hash `acl list` shows (enough to tell clients apart, useless to an attacker).
HASH_SHOWN = 8


def _agents(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def _acl_path(args: argparse.Namespace, settings: Settings) -> Path | None:
    if args.file:
        return Path(args.file).expanduser()
    return settings.acl_file


def cmd_acl_add_client(args: argparse.Namespace, settings: Settings) -> int:
    """Add a named client with grants; print its fresh token once."""
    path = _acl_path(args, settings)
    if path is None:
        print("cpersona acl: no ACL file: pass --file PATH or set CPERSONA_ACL_FILE", file=sys.stderr)
        return 2
    grants = merge_grants(_agents(args.read), _agents(args.write), _agents(args.admin))
    if not grants:
        print(
            "cpersona acl: give at least one grant (--read, --write or --admin AGENT[,AGENT...]; '*' = all)",
            file=sys.stderr,
        )
        return 2
    try:
        token = add_client(path, args.name, grants)
    except (AclError, OSError, UnicodeError) as exc:
        print(f"cpersona acl: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(
            json.dumps(
                {
                    "ok": True,
                    "client": args.name,
                    "token": token,
                    "file": str(path),
                    "grants": {agent: level.label for agent, level in grants.items()},
                }
            )
        )
    else:
        print(token)
        summary = ", ".join(f"{agent}={level.label}" for agent, level in grants.items())
        print(
            f"added client {args.name!r} to {path} ({summary}). The token above is shown only now: give it "
            "to the client (Authorization: Bearer <token>) and restart the server.",
            file=sys.stderr,
        )
    return 0


def cmd_acl_list(args: argparse.Namespace, settings: Settings) -> int:
    """List the clients of the ACL file with their grants (hash prefixes only)."""
    path = _acl_path(args, settings)
    if path is None:
        print("cpersona acl: no ACL file: pass --file PATH or set CPERSONA_ACL_FILE", file=sys.stderr)
        return 2
    try:
        acl = load_acl(path)
    except AclError as exc:
        print(f"cpersona acl: {exc}", file=sys.stderr)
        return 1
    rows: list[dict[str, Any]] = [
        {
            "client": c.name,
            "token_sha256_prefix": c.token_sha256[:HASH_SHOWN],
            "grants": {agent: level.label for agent, level in c.grants.items()},
        }
        for c in acl.clients
    ]
    if args.json:
        print(json.dumps({"ok": True, "file": str(path), "clients": rows}, ensure_ascii=False, indent=2))
        return 0
    print(f"{len(rows)} client(s) in {path}")
    for row in rows:
        grants = ", ".join(f"{agent}={level}" for agent, level in row["grants"].items()) or "(no grants)"
        print(f"  {row['client']}  sha256:{row['token_sha256_prefix']}…  {grants}")
    return 0


def add_acl_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``acl add-client`` and ``acl list``."""
    acl = sub.add_parser("acl", help="manage HTTP clients and their per-agent grants (CPERSONA_ACL_FILE)")
    acl_sub = acl.add_subparsers(dest="acl_command", metavar="ACL_COMMAND", required=True)

    add = acl_sub.add_parser("add-client", help="add a client; prints its new token once")
    add.add_argument("name", help="client name (letters, digits, '-', '_')")
    add.add_argument("--read", metavar="AGENTS", help="comma-separated agent ids to grant read ('*' = all)")
    add.add_argument("--write", metavar="AGENTS", help="agent ids to grant write (includes read)")
    add.add_argument("--admin", metavar="AGENTS", help="agent ids to grant admin (includes write and read)")
    add.add_argument("--file", help="ACL file (default: CPERSONA_ACL_FILE); created when missing")
    add.add_argument("--json", action="store_true", help="print JSON (token included)")
    add.set_defaults(func=cmd_acl_add_client)

    listing = acl_sub.add_parser("list", help="list clients and grants (never the hashes in full)")
    listing.add_argument("--file", help="ACL file (default: CPERSONA_ACL_FILE)")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(func=cmd_acl_list)
