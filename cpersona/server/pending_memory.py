"""A ``Memory`` opened in a background thread, so the server answers ``initialize`` at once.

Its own module so that the server (app.py) and its resources and prompts handlers both use it
without importing each other.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cpersona.memory import Memory

log = logging.getLogger("cpersona.server")


class PendingMemory:
    """A ``Memory`` opened in a background thread while the server answers the handshake.

    ``get`` waits for it (a tool call needs it) and raises what opening raised,
    for every call, so a database that cannot be opened is reported per call.
    """

    def __init__(
        self, factory: Callable[[], Memory], on_error: Callable[[BaseException], None] | None = None
    ) -> None:
        self._factory = factory
        self._on_error = on_error
        self._done = threading.Event()
        self._memory: Memory | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._open, name="cpersona-open", daemon=True)

    def start(self) -> PendingMemory:
        """Start opening; returns self."""
        self._thread.start()
        return self

    def _open(self) -> None:
        try:
            self._memory = self._factory()
        except BaseException as exc:  # reported by every get(), and once here
            self._error = exc
            if self._on_error is not None:
                self._on_error(exc)
            else:
                log.error("the memory database could not be opened: %s", exc)
        finally:
            self._done.set()

    def get(self) -> Memory:
        """The opened Memory (waits for it); raises what opening raised."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._memory is not None
        return self._memory

    def close(self, timeout: float | None = None) -> None:
        """Close the Memory once it is open: waits for the opening to finish, at most ``timeout`` s.

        A server stopped by a signal passes a bound: an opening still under way after it is left to
        the process's exit (its thread is a daemon; SQLite rolls back a migration it was writing).
        """
        if self._thread.ident is None:  # stopped (Ctrl-C) before start(): nothing was opened
            return
        if not self._done.wait(timeout):
            log.warning("stopping while the database was still being opened; it was left unopened")
            return
        if self._memory is not None:
            self._memory.close()
