"""ACL grants for what is inside export/import files (docs/decisions.md#portability: the export folder is no back door).

Checking only the agent-id arguments let a client copy another agent's export into
its own agent (issue 17). Under an ACL file two rules hold, in this order:

1. **A folder per client.** An HTTP client's paths resolve inside
   ``<export dir>/clients/<client name>/`` (paths.py): it cannot name, probe or
   replace another client's files, nor files in the shared folder.
2. **The rows inside a file decide, not only the arguments.** Before an import
   writes or reports anything, the whole file is read once and every agent named
   in it (the header's ``agent_id`` and each record's; link and supersede lines hold no row and
   are judged by the records they join) is checked: with
   ``target_agent_id`` the client needs ``read`` on every source agent (it is
   copying their rows) and on each record having one; without it, ``admin`` on
   each (the rows land there). Replacing a file with ``overwrite`` needs ``admin``
   on every agent whose rows the old file holds. A refusal names no agent and
   reports no counts, so a dry run tells nothing about a file the client may not read.

Without an ACL (stdio, one shared token, the Python API, the CLI) ``scope`` is None
and none of this applies: the process owns the whole database.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from cpersona.acl import WILDCARD, Client, Level
from cpersona.errors import Forbidden
from cpersona.portability.importer import read_lines
from cpersona.storage.supersede_interface import SUPERSEDE_RECORD


@dataclass(frozen=True)
class FileScope:
    """One ACL client's reach through files: its folder name and its grants."""

    client: str
    may_read: Callable[[str], bool]
    may_admin: Callable[[str], bool]
    reads_all: bool
    admins_all: bool

    @classmethod
    def of(cls, client: Client) -> FileScope:
        """The scope of an authenticated ACL client (its name is a safe folder name: acl.CLIENT_NAME)."""
        return cls(
            client=client.name,
            may_read=lambda agent: client.may(agent, Level.READ),
            may_admin=lambda agent: client.may(agent, Level.ADMIN),
            reads_all=client.may(WILDCARD, Level.READ),
            admins_all=client.may(WILDCARD, Level.ADMIN),
        )


_UNNAMED = object()  # a record without a (string) agent_id
#: Lines that hold no row: a link or supersede line names two memory records of the same file by
#: their source ids (an end not in the file is dropped), so it is judged by the agents they resolve to.
_ROWLESS = ("link", SUPERSEDE_RECORD)


def _agents_in(handle: BinaryIO) -> Iterator[object]:
    """Each agent id the file names (header and records); ``_UNNAMED`` for a record without one.

    Lines that are not JSON objects are skipped: the import reports them as bad lines and
    writes nothing for them, so they carry no row to protect.
    """
    for _number, raw in read_lines(handle):
        if raw is None or not raw.strip():
            continue
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        if not isinstance(obj, dict):
            continue
        agent = obj.get("agent_id")
        if obj.get("type") in _ROWLESS:
            continue  # its ends are memory records of this file, each judged by its own agent_id
        if obj.get("type") == "header" or obj.get("_type") == "header":  # ours, or the original's
            if isinstance(agent, str) and agent:  # the original writes "" for an export of every agent
                yield agent
            continue
        yield agent if isinstance(agent, str) else _UNNAMED


def _refuse(scope: FileScope, what: str, need: str) -> Forbidden:
    return Forbidden(
        f"client {scope.client!r} may not {what}: the file holds rows of agents its grants do not cover "
        f"({need}; see the README, 'Several clients over HTTP: ACLs')"
    )


def check_import(scope: FileScope, handle: BinaryIO, *, target_agent: str | None) -> None:
    """Refuse (Forbidden) unless ``scope`` may import every row of ``handle``; rewinds the handle."""
    try:
        check_agents(scope, _agents_in(handle), target_agent=target_agent)
    finally:
        handle.seek(0)


def check_agents(scope: FileScope, agents: Iterable[object], *, target_agent: str | None) -> None:
    """Refuse (Forbidden) unless ``scope`` may import rows of each of ``agents`` (a file's, a database's)."""
    copying = target_agent is not None
    if scope.admins_all or (copying and scope.reads_all):
        return
    allowed = scope.may_read if copying else scope.may_admin
    for agent in agents:
        if agent is _UNNAMED:
            if copying:  # a row of unknown origin is only copied by a client that may read everything
                raise _refuse(scope, "import this file", "a record without agent_id needs read on '*'")
            continue  # without a target such a line is refused by the import itself
        if not allowed(str(agent)):
            need = "read on every agent in the file" if copying else "admin on every agent in the file"
            raise _refuse(scope, "import this file", need)


def check_replace(scope: FileScope, handle: BinaryIO) -> None:
    """Refuse (Forbidden) replacing a file holding rows of an agent ``scope`` has no admin on."""
    if scope.admins_all:
        return
    for agent in _agents_in(handle):
        if agent is not _UNNAMED and not scope.may_admin(str(agent)):
            raise _refuse(scope, "replace this file", "replacing it needs admin on every agent in it")
