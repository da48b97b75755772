"""Who may do what: the ACL's clients, their token hashes and per-agent grants (plain Python, no file).

Levels are hierarchical: ``admin`` ⊇ ``write`` ⊇ ``read``. A client's level on agent X is the higher of its
grant on X and its grant on the wildcard ``*``; no grant means no access (deny by default). Both file
formats (``cpersona.acl.file``: ours; ``cpersona.acl.original``: the original CPersona's) read into these.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

#: The wildcard agent: a grant on it covers every agent (and process-wide tools).
WILDCARD = "*"


#: Characters of a freshly issued token (secrets.token_urlsafe(32) gives 43).
TOKEN_BYTES = 32


#: Client names are TOML bare keys, so they need no quoting and cannot be confused.
CLIENT_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


_HEX64 = re.compile(r"^[0-9a-f]{64}$")


class Level(IntEnum):
    """Grant levels, ordered: a higher level includes every lower one."""

    READ = 1
    WRITE = 2
    ADMIN = 3

    @property
    def label(self) -> str:
        """The lower-case name used in the file and in messages."""
        return self.name.lower()


LEVELS = {level.label: level for level in Level}


class AclError(ValueError):
    """The ACL file is missing or malformed; the message names the file and the line at fault."""


@dataclass(frozen=True)
class Client:
    """One named client: its token hash and its grants (agent id or ``*`` → level)."""

    name: str
    token_sha256: str
    grants: Mapping[str, Level]

    def level_on(self, agent: str) -> Level | None:
        """The effective level on ``agent`` (its own grant or the wildcard's, whichever is higher)."""
        levels = [lvl for lvl in (self.grants.get(agent), self.grants.get(WILDCARD)) if lvl is not None]
        return max(levels) if levels else None

    def may(self, agent: str, level: Level) -> bool:
        """True when the client holds at least ``level`` on ``agent``."""
        have = self.level_on(agent)
        return have is not None and have >= level

    def agents_at(self, level: Level) -> frozenset[str] | None:
        """Agents on which the client holds at least ``level``; None when the wildcard covers them all."""
        if self.may(WILDCARD, level):
            return None
        return frozenset(agent for agent, have in self.grants.items() if agent != WILDCARD and have >= level)


@dataclass(frozen=True)
class AccessList:
    """The parsed ACL file."""

    path: Path
    clients: tuple[Client, ...]

    def authenticate(self, token: str) -> Client | None:
        """The client whose token hash matches ``token``, or None.

        Every client's hash is compared (constant-time each, no early exit), so
        the response time says nothing about which client, or how much, matched.
        """
        digest = hash_token(token).encode()
        found: Client | None = None
        for client in self.clients:
            if hmac.compare_digest(digest, client.token_sha256.encode()):
                found = client
        return found


def hash_token(token: str) -> str:
    """The SHA-256 hex digest stored for ``token``."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def new_token() -> str:
    """A fresh random bearer token (URL-safe, 43 characters)."""
    return secrets.token_urlsafe(TOKEN_BYTES)
