"""The original CPersona's ACL file, read as ours (docs/moving-from-cpersona.md#the-acl-file).

Its format (JSON)::

    {"clients": [{"client_id": "ci-bot", "token": "<token or ${ENV_VAR}>",
                  "grants": {"agent-a": "read-write", "*": "read"}}]}

Read into the same ``AccessList`` as our TOML file: the token (or the environment variable it names)
is hashed on load and never kept; ``read`` is our ``read``; ``read-write``, the top of its
lattice, which let a client call every tool, is our ``admin``, so a host that worked keeps working;
``none`` is no grant. A named grant below the client's ``*`` grant (an exception there; levels only
add up here) is refused rather than read wider. Rows with no home here are left out and named in one notice: ``local`` (its
stdio principal: this edition applies the ACL to HTTP only), ``"token": null`` and ``per_subject``
rows (principals an OAuth resolver asserts; this edition has no resolver).
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any

from cpersona.acl.policy import CLIENT_NAME, WILDCARD, AccessList, AclError, Client, Level, hash_token

log = logging.getLogger("cpersona.acl")

#: Its permission names and ours.
LEVELS = {"read": Level.READ, "read-write": Level.ADMIN}
_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def looks_original(text: str) -> bool:
    """Whether the ACL file is the original's JSON (ours is TOML, which never starts with '{')."""
    return text.lstrip().startswith("{")


def parse_original_acl(text: str, path: Path) -> AccessList:
    """Parse the original's JSON ACL ``text`` (read from ``path``, named in errors)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AclError(f"ACL file {path}, line {exc.lineno}: not valid JSON ({exc.msg})") from exc
    entries = data.get("clients") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise AclError(f'ACL file {path}: the original CPersona\'s format is {{"clients": [...]}}')
    clients: list[Client] = []
    left_out: list[str] = []
    for index, entry in enumerate(entries):
        client = _client(entry, index, path, left_out)
        if client is not None:
            clients.append(client)
    if len({c.token_sha256 for c in clients}) != len(clients):
        raise AclError(f"ACL file {path}: two clients share a token; each client needs its own")
    log.warning(
        "ACL file %s is the original CPersona's JSON format: read as this edition's (read-write = admin)%s",
        path,
        f"; left out (no home here): {', '.join(left_out)}" if left_out else "",
    )
    return AccessList(path, tuple(clients))


def _client(entry: Any, index: int, path: Path, left_out: list[str]) -> Client | None:
    where = f"ACL file {path}, clients[{index}]"
    if not isinstance(entry, dict) or not isinstance(entry.get("client_id"), str):
        raise AclError(f"{where}: each client needs a client_id string")
    name = entry["client_id"]
    if name == "local":
        left_out.append("'local' (the ACL applies to HTTP clients only)")
        return None
    if entry.get("token") is None or entry.get("per_subject"):
        left_out.append(f"{name!r} (a principal an OAuth resolver asserts)")
        return None
    if not CLIENT_NAME.match(name):
        raise AclError(
            f"{where}: client_id {name!r} must be 1-64 letters, digits, '-' or '_' here (a folder name)"
        )
    token = entry["token"]
    reference = _ENV_REFERENCE.fullmatch(token) if isinstance(token, str) else None
    if reference:
        token = os.environ.get(reference[1], "")
        if not token:
            raise AclError(f"{where}: the token's environment variable {reference[1]} is unset or empty")
    if not isinstance(token, str) or not token:
        raise AclError(f"{where}: token must be a non-empty string")
    grants_raw = entry.get("grants")
    if not isinstance(grants_raw, dict):
        raise AclError(f"{where}: grants must be an object")
    for agent, permission in grants_raw.items():
        if permission != "none" and permission not in LEVELS:
            raise AclError(
                f"{where}: grant {agent!r} is {permission!r}; the original's are read, read-write, none"
            )
    grants = {agent: LEVELS[p] for agent, p in grants_raw.items() if p != "none"}
    # There a named grant beats the wildcard both ways (an exception below it); here levels only add
    # up, so such an exception would widen the client's access: refused rather than read wider.
    wildcard = grants.get(WILDCARD)
    below = sorted(
        a for a in grants_raw if a != WILDCARD and wildcard is not None and grants.get(a, 0) < wildcard
    )
    if below:
        raise AclError(
            f"{where}: {name!r} grants {', '.join(map(repr, below))} less than its '*' grant; this edition "
            "has no exceptions below a wildcard (levels add up): list its agents one by one instead"
        )
    return Client(name, hash_token(token), grants)
