"""Per-client grants for the browser view: the hook an ACL file plugs into.

Today every client that passed the guard sees and may change everything (a single
token, or loopback). When per-client ACL grants exist (CPERSONA_ACL_FILE), the lead wires
``grants_for_request`` to return the logged-in client's grants; every page and action of
the view already asks these questions, so nothing else changes.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

Action = Literal["read", "write", "admin"]


class ClientGrants(Protocol):
    """What one client may see and do."""

    @property
    def unrestricted(self) -> bool:
        """True when the client sees every agent (pages may then list all agents at once)."""
        ...

    def allows(self, action: Action, agent_id: str | None) -> bool:
        """May the client perform ``action`` on ``agent_id`` (None: the whole store)?"""
        ...


class AllowAll:
    """The grants of the only client there is without an ACL file."""

    unrestricted = True

    def allows(self, action: Action, agent_id: str | None) -> bool:
        """Everything is allowed."""
        return True


def grants_for_request(state: Any) -> ClientGrants:
    """ACL HOOK (w2-acl): the grants of the client behind this request (``request.state``).

    Replace the body with a lookup of the client identified at login (the token it used)
    once ACL files are supported; return ``AllowAll()`` only when no ACL file is configured.
    """
    return AllowAll()
