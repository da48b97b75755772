"""``CalibrationStates`` on PostgreSQL: table ``calibration_state`` (migration 3), one row per agent.

Every server sharing the database shares one gate: the state is in the database, not in a file
beside some path. One calibration per agent at a time across servers: a session-level advisory lock
keyed by the agent (``pg_try_advisory_lock(CALIBRATE_LOCK, hashtext(agent_id))``) held for the
calibration; each write re-reads the row under a transaction-level advisory lock of its own, so a
precision change and a calibration landing together keep both. Reads are cached for a few seconds
(a recall asks once per query); a write by this process refreshes the cache at once.
A state that cannot be saved (a read-only role, a hot standby) stays in force in this process and
``problem()`` says why; a read that fails reads as "no calibration", never a failed recall.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from cpersona.core.text import format_ts, utc_now
from cpersona.storage.values import CalibrationEntry as Entry
from cpersona.storage.values import Change, Saved

#: Advisory-lock class of "calibrating agent X" (two-int form: this, hashtext(agent_id)).
CALIBRATE_LOCK = 0x63616C31  # "cal1"
#: Advisory-lock class of "writing agent X's row" (transaction-level).
WRITE_LOCK = 0x63616C32  # "cal2"
#: How long a read of another server's calibration may be cached.
CACHE_SECONDS = 2.0
_POLL_SECONDS = 0.05


def _copy(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _load(text: Any) -> Entry | None:
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class PgCalibrationStates:
    """Per-agent calibration state in the ``calibration_state`` table of one database."""

    def __init__(self, pool: ConnectionPool[Any], location: str) -> None:
        self.pool = pool
        self._location = location
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[float, Entry | None]] = {}
        self._unsaved: dict[str, Entry | None] = {}
        self._problem: str | None = None

    @property
    def location(self) -> str:
        """Where the state lives."""
        return f"table calibration_state of {self._location}"

    def agents(self) -> dict[str, Entry]:
        """Every agent's entry (this process's unsaved ones included)."""
        try:
            with self.pool.connection() as conn:
                rows = conn.execute(
                    "SELECT agent_id, entry FROM calibration_state ORDER BY agent_id"
                ).fetchall()
            found = {str(r["agent_id"]): e for r in rows if (e := _load(r["entry"])) is not None}
        except psycopg.Error:
            found = {}
        with self._lock:
            for agent, entry in self._unsaved.items():
                if entry is None:
                    found.pop(agent, None)
                else:
                    found[agent] = entry
        return _copy(found)

    def get(self, agent_id: str) -> Entry | None:
        """One agent's entry (a copy) or None; cached for ``CACHE_SECONDS``."""
        entry = self.peek(agent_id)
        return _copy(entry) if entry is not None else None

    def peek(self, agent_id: str) -> Entry | None:
        """One agent's entry as held (not a copy: read it, never change it) or None; cached for
        ``CACHE_SECONDS``."""
        now = time.monotonic()
        with self._lock:
            if agent_id in self._unsaved:
                return self._unsaved[agent_id]
            cached = self._cache.get(agent_id)
            if cached is not None and now - cached[0] < CACHE_SECONDS:
                return cached[1]
        try:
            with self.pool.connection() as conn:
                row = conn.execute(
                    "SELECT entry FROM calibration_state WHERE agent_id = %s", (agent_id,)
                ).fetchone()
            entry = _load(row["entry"]) if row else None
        except psycopg.Error:
            return None  # an unreadable state is "not calibrated"; the recall itself reports the database
        with self._lock:
            self._cache[agent_id] = (now, entry)
        return entry

    @contextmanager
    def exclusive(self, agent_id: str, wait: float = 0.0) -> Iterator[bool]:
        """Hold the right to calibrate ``agent_id`` across every server on this database."""
        with self.pool.connection() as conn:
            deadline = time.monotonic() + max(wait, 0.0)
            while True:
                row = conn.execute(
                    "SELECT pg_try_advisory_lock(%s, hashtext(%s)) AS got", (CALIBRATE_LOCK, agent_id)
                ).fetchone()
                if row and row["got"]:
                    break
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(_POLL_SECONDS)
            try:
                yield True
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (CALIBRATE_LOCK, agent_id))

    def modify(self, agent_id: str, change: Change, wait: float = 30.0) -> Saved:
        """Re-read the agent's row under a lock, apply ``change`` and write it (None deletes the row)."""
        try:
            with self.pool.connection() as conn, conn.transaction():
                conn.execute(f"SET LOCAL lock_timeout = '{int(max(wait, 0.1) * 1000)}ms'")
                conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (WRITE_LOCK, agent_id))
                row = conn.execute(
                    "SELECT entry FROM calibration_state WHERE agent_id = %s", (agent_id,)
                ).fetchone()
                with self._lock:  # an entry this process could not save earlier is the newer one
                    pending = agent_id in self._unsaved
                    current = (
                        self._unsaved.get(agent_id) if pending else (_load(row["entry"]) if row else None)
                    )
                entry = change(_copy(current) if current is not None else None)
                if entry is None:
                    conn.execute("DELETE FROM calibration_state WHERE agent_id = %s", (agent_id,))
                else:
                    conn.execute(
                        "INSERT INTO calibration_state (agent_id, entry, updated_at) VALUES (%s, %s, %s) "
                        "ON CONFLICT (agent_id) DO UPDATE SET entry = EXCLUDED.entry, updated_at = EXCLUDED.updated_at",
                        (agent_id, json.dumps(entry, sort_keys=True), format_ts(utc_now())),
                    )
        except psycopg.Error as exc:
            problem = f"cannot write calibration_state: {str(exc).strip() or type(exc).__name__}"
            with self._lock:
                current = self._unsaved.get(agent_id) if agent_id in self._unsaved else self._cached(agent_id)
                entry = change(_copy(current) if current is not None else None)
                self._unsaved[agent_id] = _copy(entry) if entry is not None else None
                self._problem = problem
            return Saved(entry, False, problem)
        with self._lock:
            self._unsaved.pop(agent_id, None)
            self._cache[agent_id] = (time.monotonic(), _copy(entry) if entry is not None else None)
            self._problem = None
        return Saved(entry, True)

    def _cached(self, agent_id: str) -> Entry | None:
        cached = self._cache.get(agent_id)
        return cached[1] if cached is not None else None

    def problem(self) -> str | None:
        """Why calibration state is not being saved (the last write failed), or None."""
        with self._lock:
            return self._problem
