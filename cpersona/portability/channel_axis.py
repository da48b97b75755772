"""migrate_channel_axis: move rows stored under a bridge channel onto the real channel they came from.

A *bridge* channel is one a relay used for many real channels at once (e.g. a
chat bridge that stored everything under ``"bridge"``). The rules:

1. Bridge channels are the names in ``BRIDGE_CHANNELS`` (``bridge``, ``relay``),
   or the list the caller passes as ``bridge_channels``.
2. For each memory under a bridge channel, the concrete channel is read from a
   stored session id, first ``metadata.session_id``, then ``source.id``. A
   session id has the form ``<platform>:<channel>[:<anything>]``: platform is
   letters, digits, ``_ . -``; the channel is the second ``:``-separated part,
   non-empty, no whitespace. ``discord:general:8812`` → ``general``.
3. A row whose session id is missing, malformed, or names a bridge channel again
   is *unrecoverable*: it stays put, unless ``globalize_unrecoverable`` moves it
   to channel ``''`` (global). Episodes carry no session id, so they are always
   unrecoverable (globalized only on request).
4. Locked rows are never moved (reported as ``locked``).
5. A move that would duplicate a row already in the target channel (same
   content, or same summary for episodes) is not made: reported as a collision.
6. Everything runs in one transaction; a dry run (the default) does the same work
   and rolls it back, so its counts are exact. A second run changes nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from cpersona.core.validation import optional_str, string_list
from cpersona.errors import InvalidInput
from cpersona.result_types.operations import MigrateChannelAxisResult
from cpersona.storage.maintenance_interface import ChannelRequest, MaintenanceRows

#: Channel names treated as bridges when the caller names none.
BRIDGE_CHANNELS: tuple[str, ...] = ("bridge", "relay")

_SESSION_ID = re.compile(r"^[A-Za-z0-9_.-]+:([^:\s]+)(?::.*)?$", re.DOTALL)


def channel_from_session_id(value: Any) -> str | None:
    """The channel part of ``<platform>:<channel>[:...]``, or None when ``value`` is not of that form."""
    if not isinstance(value, str):
        return None
    match = _SESSION_ID.match(value.strip())
    return match.group(1) if match else None


def _field(text: str | None, name: str) -> Any:
    if not text:
        return None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return None
    return obj.get(name) if isinstance(obj, dict) else None


def resolve_channel(source: str | None, metadata: str | None) -> str | None:
    """Rule 2: metadata.session_id first, then source.id."""
    return channel_from_session_id(_field(metadata, "session_id")) or channel_from_session_id(
        _field(source, "id")
    )


def migrate(
    rows: MaintenanceRows,
    *,
    agent_id: str | None,
    dry_run: bool,
    globalize_unrecoverable: bool,
    bridge_channels: Sequence[str] | None = None,
) -> MigrateChannelAxisResult:
    """Run (or preview) the repair; returns counts, target channels and example refs per problem."""
    agent = optional_str(agent_id, "agent_id")
    if not isinstance(dry_run, bool) or not isinstance(globalize_unrecoverable, bool):
        raise InvalidInput("dry_run and globalize_unrecoverable must be true or false")
    names = (
        BRIDGE_CHANNELS
        if bridge_channels is None
        else string_list(bridge_channels, "bridge_channels", 50, 512)
    )
    bridges = tuple(dict.fromkeys(n for n in names if n))
    if not bridges:
        raise InvalidInput("bridge_channels must name at least one non-empty channel")
    report = rows.migrate_channels(
        ChannelRequest(agent, bridges, resolve_channel, globalize_unrecoverable, dry_run)
    )
    return {
        "ok": True,
        "dry_run": dry_run,
        "agent_id": agent,
        "bridge_channels": list(bridges),
        "scanned": report.scanned,
        "moved": report.moved,
        "globalized": report.globalized,
        "unrecoverable": report.unrecoverable,
        "collisions": report.collisions,
        "locked": report.locked,
        "targets": report.targets,
        "examples": report.examples,
    }
