"""Per-client grants for the browser view: what the logged-in client may see and change.

Without an ACL file there is one client (the token holder, or whoever reaches the loopback
port) and it may do everything (``AllowAll``). With ``CPERSONA_ACL_FILE`` every session is
tied to one named ACL client at login, and ``grants_for_request`` answers from that
client's grants (``ClientAccess``); every page and action of the view asks it.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from cpersona.acl import WILDCARD, Client, Level

Action = Literal["read", "write", "admin"]
_LEVEL_OF: dict[str, Level] = {"read": Level.READ, "write": Level.WRITE, "admin": Level.ADMIN}


class ClientGrants(Protocol):
    """What one client may see and do."""

    @property
    def unrestricted(self) -> bool:
        """True when the client sees every agent (pages may then list all agents at once)."""
        ...

    def allows(self, action: Action, agent_id: str | None) -> bool:
        """May the client perform ``action`` on ``agent_id`` (None: the whole store)?"""
        ...

    def readable_agents(self) -> frozenset[str] | None:
        """The agents whose rows the client may read (None: every agent), for the API's ``allowed_agents``."""
        ...


class AllowAll:
    """The grants of the only client there is without an ACL file."""

    unrestricted = True

    def allows(self, action: Action, agent_id: str | None) -> bool:
        """Everything is allowed."""
        return True

    def readable_agents(self) -> frozenset[str] | None:
        """Every agent."""
        return None


class DenyAll:
    """Under an ACL file, a request with no logged-in client (never reaches a page; defence in depth)."""

    unrestricted = False

    def allows(self, action: Action, agent_id: str | None) -> bool:
        """Nothing is allowed."""
        return False

    def readable_agents(self) -> frozenset[str] | None:
        """No agent."""
        return frozenset()


class ClientAccess:
    """The grants of one ACL client (levels are hierarchical: admin ⊇ write ⊇ read)."""

    def __init__(self, client: Client) -> None:
        self.client = client

    @property
    def unrestricted(self) -> bool:
        """Read on ``*``: the client sees every agent."""
        return self.client.may(WILDCARD, Level.READ)

    def allows(self, action: Action, agent_id: str | None) -> bool:
        """The client's level on ``agent_id`` (``*`` for the whole store) covers ``action``."""
        return self.client.may(WILDCARD if agent_id is None else agent_id, _LEVEL_OF[action])

    def readable_agents(self) -> frozenset[str] | None:
        """The agents the client holds read (or more) on; None when read on ``*`` covers them all."""
        return self.client.agents_at(Level.READ)


def grants_for_request(state: Any) -> ClientGrants:
    """The grants of the client behind this request (``request.state``, filled by ``GuardMiddleware``)."""
    guard = getattr(state, "guard", None)
    if guard is None or guard.acl is None:
        return AllowAll()
    client = getattr(state, "client", None)
    return ClientAccess(client) if isinstance(client, Client) else DenyAll()
