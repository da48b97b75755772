"""The process-wide persistence switch (docs/tools.md#pause_persistence, docs/decisions.md#session-controls).

``pause_persistence(ttl_seconds)`` stops this server process from writing to
the database for a while: ``store`` answers ``result: skipped, persisted:
false``, every other write is refused with ``error_code: persistence_paused``
(and ``persisted: false``), recall skips its bookkeeping write, ``fix=true``
repairs become report-only and migrations are forced to dry-run. The pause
ends by itself when its TTL runs out, so a forgotten pause cannot silently
discard memories for ever.

This is one of the two pieces of process-level state the spec allows: one
``PersistenceSwitch`` owned by the process (``PROCESS``). Tests build their own
with a fake clock, or reset ``PROCESS`` between tests.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cpersona.core.text import iso_seconds
from cpersona.errors import InvalidInput, PersistencePaused
from cpersona.result_types.everyday import StorePaused

#: Longest pause one call may set (24 h): long enough for a working day, short enough to be noticed.
MAX_TTL_SECONDS = 24 * 60 * 60


def validate_ttl(ttl_seconds: Any) -> int:
    """``ttl_seconds`` as an int in 1..MAX_TTL_SECONDS, or InvalidInput naming the rule."""
    if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int):
        raise InvalidInput(f"ttl_seconds must be a positive integer, got {type(ttl_seconds).__name__}")
    if not 1 <= ttl_seconds <= MAX_TTL_SECONDS:
        raise InvalidInput(f"ttl_seconds must be between 1 and {MAX_TTL_SECONDS} (24 h), got {ttl_seconds}")
    return ttl_seconds


@dataclass(frozen=True)
class PauseState:
    """A snapshot of the switch: ``paused`` with its window, or not paused."""

    paused: bool
    remaining_seconds: int = 0
    since: str | None = None
    until: str | None = None
    ttl_seconds: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "paused": self.paused,
            "remaining_seconds": self.remaining_seconds,
            "since": self.since,
            "until": self.until,
            "ttl_seconds": self.ttl_seconds,
        }


class PersistenceSwitch:
    """Thread-safe pause flag with an expiry.

    ``clock`` is monotonic (decides expiry, immune to wall-clock jumps);
    ``wall`` only dates ``since`` / ``until`` for people. Both are injectable.
    """

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time
    ) -> None:
        self._clock = clock
        self._wall = wall
        self._lock = threading.Lock()
        self._deadline: float | None = None  # on ``clock``
        self._since_wall = 0.0
        self._ttl = 0

    def _expire_locked(self) -> None:
        if self._deadline is not None and self._clock() >= self._deadline:
            self._deadline = None

    def _state_locked(self) -> PauseState:
        self._expire_locked()
        if self._deadline is None:
            return PauseState(False)
        remaining = self._deadline - self._clock()
        return PauseState(
            True,
            # Round up: "0 s left" while still paused would mislead.
            remaining_seconds=max(1, int(remaining + 0.999)),
            since=iso_seconds(self._since_wall),
            until=iso_seconds(self._since_wall + self._ttl),
            ttl_seconds=self._ttl,
        )

    def pause(self, ttl_seconds: Any) -> dict[str, Any]:
        """Pause writes for ``ttl_seconds`` (1..24 h); a pause while paused replaces the window."""
        ttl = validate_ttl(ttl_seconds)
        with self._lock:
            was = self._state_locked()
            self._deadline = self._clock() + ttl
            self._since_wall = self._wall()
            self._ttl = ttl
            state = self._state_locked()
        return {"ok": True, **state.as_dict(), "was_paused": was.paused}

    def resume(self) -> dict[str, Any]:
        """End the pause now (harmless when not paused)."""
        with self._lock:
            was = self._state_locked()
            self._deadline = None
        return {"ok": True, "paused": False, "was_paused": was.paused}

    def state(self) -> PauseState:
        """The current state (an expired pause reads as not paused)."""
        with self._lock:
            return self._state_locked()

    @property
    def paused(self) -> bool:
        """True while a pause is in force."""
        return self.state().paused

    def status(self) -> dict[str, Any]:
        """``{ok, paused, remaining_seconds, since, until, ttl_seconds}``."""
        return {"ok": True, **self.state().as_dict()}

    def reason(self) -> str:
        """The sentence every paused write carries."""
        state = self.state()
        until = f" until {state.until}" if state.until else ""
        left = f"{state.remaining_seconds}s left"
        return f"persistence paused{until} ({left}); call resume_persistence to resume"

    def check_writable(self, action: str) -> None:
        """Raise PersistencePaused (``persisted: false``) when paused; the guard at the top of each write."""
        if self.paused:
            raise PersistencePaused(f"{action} not performed: {self.reason()}")

    def store_skipped(self) -> StorePaused:
        """The ``store`` answer while paused (skipped, ``persisted: false``; docs/tools.md#pause_persistence)."""
        return {"ok": True, "result": "skipped", "persisted": False, "reason": self.reason()}

    def effective_fix(self, fix: bool) -> tuple[bool, str | None]:
        """What ``fix=`` really means now: repairs become report-only while paused (with a note why)."""
        if fix and self.paused:
            return False, f"fix=true downgraded to report-only: {self.reason()}"
        return fix, None

    def effective_dry_run(self, dry_run: bool) -> tuple[bool, str | None]:
        """What ``dry_run=`` really means now: forced to True while paused (with a note why)."""
        if not dry_run and self.paused:
            return True, f"dry_run forced: {self.reason()}"
        return dry_run, None


#: The one switch of this process. Every Memory in the process obeys it (process-wide: docs/decisions.md#session-controls).
PROCESS = PersistenceSwitch()


def check_writable(action: str) -> None:
    """``PROCESS.check_writable``: raise PersistencePaused while this process is paused."""
    PROCESS.check_writable(action)


def is_paused() -> bool:
    """True while this process is paused."""
    return PROCESS.paused


def effective_fix(fix: bool) -> tuple[bool, str | None]:
    """``PROCESS.effective_fix``: for check_health / deep_check."""
    return PROCESS.effective_fix(fix)


def effective_dry_run(dry_run: bool) -> tuple[bool, str | None]:
    """``PROCESS.effective_dry_run``: for migrate_channel_axis (and any other migration)."""
    return PROCESS.effective_dry_run(dry_run)
