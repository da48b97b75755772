"""The server's side of the hooks: which socket a database's hooks use, and starting it in ``serve``.

``register --hooks`` writes the socket path and the database into the hook commands from the
same settings the server entry carries, so the hook and the server meet at one path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cpersona.hooks.endpoint import HookEndpoint, socket_path

if TYPE_CHECKING:
    from cpersona.config import Settings
    from cpersona.memory import Memory

log = logging.getLogger(__name__)


def database_location(settings: Settings) -> str:
    """The database as hooks name it: the PostgreSQL URL, or the SQLite file's absolute path."""
    if settings.db_url:
        return settings.db_url
    return str(Path(settings.db_path).expanduser().absolute())


def hook_socket(settings: Settings) -> Path:
    """The hook socket of ``settings``' database for this user."""
    return socket_path(Path(settings.runtime_dir), database_location(settings))


def start_endpoint(settings: Settings, get_memory: Callable[[], Memory]) -> HookEndpoint | None:
    """Listen for hooks beside the server (None, with a warning, when the runtime directory is unusable).

    ``get_memory`` waits for the server's Memory: a hook arriving while it still opens waits too,
    up to its own budget, and then injects nothing.
    """
    from cpersona.hooks.answer import respond

    def answerer(request: dict[str, Any]) -> tuple[dict[str, Any], Callable[[], None] | None]:
        return respond(get_memory(), settings, request)

    try:
        return HookEndpoint(hook_socket(settings), answerer).start()
    except OSError as exc:  # RendezvousError is an OSError: an unsafe or unusable runtime directory
        log.warning(
            "host hooks cannot reach this server (%s); they answer keyword-only in their own process", exc
        )
        return None
