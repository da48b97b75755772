"""The ACL file (``CPERSONA_ACL_FILE``, docs/architecture.md#access-control-http-with-an-acl-file): named HTTP clients, token hashes, per-agent grants.

Format (TOML)::

    [clients.ci-bot]
    token_sha256 = "<64 hex digits: sha256 of the client's bearer token>"
    grants = { "agent-a" = "write", "*" = "read" }

Levels are hierarchical: ``admin`` ⊇ ``write`` ⊇ ``read``. A client's level on
agent X is the higher of its grant on X and its grant on the wildcard ``*``;
no grant means no access (deny by default). The file never holds a token in
clear: tokens are random (``secrets.token_urlsafe``, 43 characters), so a plain
SHA-256 is enough to make the file useless to a reader, and a slow password
hash would only slow every request down.

This module is plain Python (no MCP, no HTTP): reading the file (ours, or the original CPersona's:
``cpersona.acl.original``) and the ``add-client`` edit; the clients and grants are ``cpersona.acl.policy``. ``cpersona.server.access`` decides what a client may call.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cpersona.acl.original import looks_original, parse_original_acl
from cpersona.acl.policy import (
    _HEX64,
    CLIENT_NAME,
    LEVELS,
    AccessList,
    AclError,
    Client,
    Level,
    hash_token,
    new_token,
)

# -- reading -----------------------------------------------------------------------------------


def load_acl(path: Path) -> AccessList:
    """Read and validate the ACL file; AclError names the line at fault."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise AclError(f"cannot read ACL file {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise AclError(f"ACL file {path} is not UTF-8 text: {exc}") from exc
    return parse_acl(text, path)


def parse_acl(text: str, path: Path) -> AccessList:
    """Parse ACL ``text`` (read from ``path``, named in errors): ours, or the original CPersona's JSON."""
    if looks_original(text):
        return parse_original_acl(text, path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib's message ends with "(at line N, column M)".
        raise AclError(f"ACL file {path}: invalid TOML: {exc}") from exc
    unknown = sorted(set(data) - {"clients"})
    if unknown:
        line = _line_of(text, rf"^\s*\[?\s*{re.escape(unknown[0])}\b")
        raise AclError(
            f"ACL file {path}, line {line}: unknown top-level key {unknown[0]!r}; only [clients.NAME]"
        )
    clients_raw = data.get("clients", {})
    if not isinstance(clients_raw, dict):
        line = _line_of(text, r"^\s*clients\b")
        raise AclError(f"ACL file {path}, line {line}: 'clients' must be a table")
    clients: list[Client] = []
    seen_hashes: dict[str, str] = {}
    seen_names: dict[str, str] = {}
    for name, body in clients_raw.items():
        client = _parse_client(text, path, name, body)
        twin = seen_names.get(name.casefold())
        if twin is not None:  # names are export folder names too; some file systems ignore case
            raise AclError(
                f"ACL file {path}, line {_client_line(text, name)}: client {name!r} differs from {twin!r} "
                "only in case; client names name their export folders, so they must differ in more than case"
            )
        seen_names[name.casefold()] = name
        other = seen_hashes.get(client.token_sha256)
        if other is not None:
            raise AclError(
                f"ACL file {path}, line {_client_line(text, name)}: client {name!r} has the same "
                f"token hash as {other!r}; each client needs its own token"
            )
        seen_hashes[client.token_sha256] = name
        clients.append(client)
    return AccessList(path, tuple(clients))


def _parse_client(text: str, path: Path, name: str, body: Any) -> Client:
    header = _client_line(text, name)
    where = f"ACL file {path}, line {header}"
    if not CLIENT_NAME.match(name):
        raise AclError(f"{where}: client name {name!r} must be 1-64 letters, digits, '-' or '_'")
    if not isinstance(body, dict):
        raise AclError(f"{where}: client {name!r} must be a table ([clients.{name}])")
    extra = sorted(set(body) - {"token_sha256", "grants"})
    if extra:
        line = _line_of(text, rf"^\s*{re.escape(extra[0])}\s*=", after=header)
        raise AclError(
            f"ACL file {path}, line {line}: unknown key {extra[0]!r} in client {name!r} "
            "(allowed: token_sha256, grants)"
        )
    digest = body.get("token_sha256")
    if not isinstance(digest, str) or not _HEX64.match(digest):
        line = _line_of(text, r"^\s*token_sha256\s*=", after=header) if "token_sha256" in body else header
        raise AclError(
            f"ACL file {path}, line {line}: client {name!r} needs token_sha256 = 64 lower-case hex "
            "digits (the SHA-256 of its token; `cpersona acl add-client` writes it); never the token"
        )
    grants_raw = body.get("grants", {})
    grants_line = _line_of(text, r"^\s*grants\s*=", after=header) if "grants" in body else header
    if not isinstance(grants_raw, dict):
        raise AclError(
            f"ACL file {path}, line {grants_line}: grants of {name!r} must be a table "
            '{ "agent" = "read" | "write" | "admin" }'
        )
    grants: dict[str, Level] = {}
    for agent, level in grants_raw.items():
        if not isinstance(level, str) or level not in LEVELS:
            raise AclError(
                f"ACL file {path}, line {grants_line}: grant {agent!r} of client {name!r} is "
                f"{level!r}; use one of read, write, admin"
            )
        grants[agent] = LEVELS[level]
    return Client(name, digest, grants)


def _client_line(text: str, name: str) -> int:
    quoted = re.escape(json.dumps(name))
    return _line_of(text, rf"^\s*\[\s*clients\s*\.\s*({re.escape(name)}|{quoted})\s*\]")


def _line_of(text: str, pattern: str, *, after: int = 0) -> int:
    """1-based number of the first line at or after line ``after`` matching ``pattern`` (1 when none)."""
    rx = re.compile(pattern)
    for number, line in enumerate(text.splitlines(), start=1):
        if number >= after and rx.search(line):
            return number
    return max(after, 1)


# -- writing -----------------------------------------------------------------------------------


def add_client(path: Path, name: str, grants: Mapping[str, Level]) -> str:
    """Append client ``name`` with ``grants`` to the ACL file (created when missing); return its token.

    The token is returned once and never stored; the file gets its SHA-256.
    The existing text is kept as it is (comments included) and the new section
    appended; the result is parsed before it replaces the file atomically (mode 0600).
    """
    if not CLIENT_NAME.match(name):
        raise AclError(f"client name {name!r} must be 1-64 letters, digits, '-' or '_'")
    existing = load_acl(path) if path.exists() else AccessList(path, ())
    if path.exists() and path.read_text(encoding="utf-8").lstrip().startswith("{"):
        raise AclError(
            f"{path} is the original CPersona's JSON ACL file, which this edition reads but does not edit; "
            "point CPERSONA_ACL_FILE at a new file for `cpersona acl add-client` and copy its clients over"
        )
    if any(client.name == name for client in existing.clients):
        raise AclError(f"client {name!r} already exists in {path}; choose another name or edit the file")
    token = new_token()
    text = path.read_text(encoding="utf-8") if path.exists() else _HEADER
    section = format_client(name, hash_token(token), grants)
    joined = (text.rstrip("\n") + "\n\n" if text.strip() else text) + section
    parse_acl(joined, path)  # never write a file the server would refuse
    _write_atomic(path, joined)
    return token


def format_client(name: str, digest: str, grants: Mapping[str, Level]) -> str:
    """The TOML section for one client."""
    # json.dumps without ensure_ascii is a valid TOML basic string for any id (control chars escaped).
    pairs = ", ".join(
        f'{json.dumps(agent, ensure_ascii=False)} = "{level.label}"' for agent, level in grants.items()
    )
    return f'[clients.{name}]\ntoken_sha256 = "{digest}"\ngrants = {{ {pairs} }}\n'


def merge_grants(
    read: Iterable[str] = (), write: Iterable[str] = (), admin: Iterable[str] = ()
) -> dict[str, Level]:
    """Grants from per-level agent lists; an agent named at several levels keeps the highest."""
    grants: dict[str, Level] = {}
    for level, agents in ((Level.READ, read), (Level.WRITE, write), (Level.ADMIN, admin)):
        for agent in agents:
            if agent in grants and grants[agent] >= level:
                continue
            grants[agent] = level
    return grants


_HEADER = (
    "# CPersona ACL (CPERSONA_ACL_FILE): one [clients.NAME] section per HTTP client.\n"
    "# token_sha256 is the SHA-256 of the client's bearer token; the token itself is never stored.\n"
    '# grants: { "agent-id" = "read" | "write" | "admin" }, "*" = every agent; admin ⊇ write ⊇ read.\n'
)


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
