"""Where per-agent calibration state lives on SQLite: the sidecar ``<db>.calibration.json`` beside the file.

The ``CalibrationStates`` protocol (``storage.interface``) has two engines: this sidecar, and a table
in the database on PostgreSQL (``storage.postgres.calibration``) so that every server sharing that
database shares one gate. Layout of the sidecar (docs/quality-gate.md)::

    {"format": 1, "agents": {"<agent_id>": {"fingerprint": {...}, "created_at": "...", "rows": 1234,
        "vector": {...}, "gate": {"kind": "query_top_cosine", "probe_top_cosines": [...]},
        "precision": {"level": "strict", "beta": null}}}}

Concurrency, several server processes on one file included:

- Readers never lock: writes go to a temporary file replaced with ``os.replace``, so a reader sees
  the old file or the new one. Reads are cached by (inode, mtime, size).
- Writers and calibrations take ``<db>.calibration.lock``: a thread lock in the process, an ``flock``
  across processes (held for one calibration, or one read-modify-write), and every write re-reads
  the file under it, so two processes never lose each other's agents.
- A state that cannot be saved (the folder is missing or read-only) never fails a recall: an
  unreadable file reads as "no calibration", and an unsaved entry is kept in this process (it is in
  force here, and written with the next successful save); ``problem()`` says why, for check_health.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from cpersona.core.atomic import write_json
from cpersona.storage.values import CalibrationEntry as Entry
from cpersona.storage.values import Change, Saved

FORMAT = 1
#: Pause between attempts while waiting for another process's calibration lock.
_LOCK_POLL_SECONDS = 0.05


def sidecar_path(db_path: Path) -> Path:
    """``<db>.calibration.json`` beside the database file."""
    return db_path.with_name(db_path.name + ".calibration.json")


def lock_path(db_path: Path) -> Path:
    """``<db>.calibration.lock``: the flock that serialises calibrations and sidecar writes."""
    return db_path.with_name(db_path.name + ".calibration.lock")


def _copy(value: Any) -> Any:
    return json.loads(json.dumps(value))


class SidecarStates:
    """``CalibrationStates`` over the sidecar file of one SQLite database."""

    def __init__(self, db_path: Path) -> None:
        self.path = sidecar_path(db_path)
        self.lock_file = lock_path(db_path)
        self._cache_lock = threading.Lock()  # guards the read cache and the unsaved overlay (short)
        self._write_lock = threading.RLock()  # one writer or calibration per process (long)
        self._depth = 0  # re-entrant holds of the flock by the thread owning _write_lock
        # Not thread-local: _write_lock already admits one thread, and _depth counts its nested holds.
        self._flock_file = FileLock(self.lock_file, mode=0o600, thread_local=False)
        self._cache: dict[str, Entry] | None = None
        self._stamp: tuple[int, int, int] | None = None
        self._unsaved: dict[str, Entry | None] = {}  # entries in force here that could not be written
        self._problem: str | None = None
        self._read_problem: str | None = None

    @property
    def location(self) -> str:
        """The sidecar file."""
        return str(self.path)

    # -- reading ----------------------------------------------------------------------------
    def _file_agents(self, fresh: bool = False) -> dict[str, Entry]:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            self._cache, self._stamp, self._read_problem = {}, None, None
            return {}
        except OSError as exc:  # NotADirectoryError, PermissionError: unreadable means uncalibrated
            self._cache, self._stamp = {}, None
            self._read_problem = f"cannot read {self.path}: {exc.strerror or exc}"
            return {}
        stamp = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        if fresh or self._cache is None or stamp != self._stamp:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                self._read_problem = None
            except (OSError, ValueError) as exc:
                data = {}  # unreadable: treated as uncalibrated; the next write replaces it
                self._read_problem = f"cannot read {self.path}: {exc}"
            agents = data.get("agents") if isinstance(data, dict) else None
            self._cache = {
                k: v for k, v in (agents if isinstance(agents, dict) else {}).items() if isinstance(v, dict)
            }
            self._stamp = stamp
        return self._cache

    def _merged(self, fresh: bool = False) -> dict[str, Entry]:
        agents = dict(self._file_agents(fresh))
        for agent, entry in self._unsaved.items():
            if entry is None:
                agents.pop(agent, None)
            else:
                agents[agent] = entry
        return agents

    def agents(self) -> dict[str, Entry]:
        """A copy of every agent's entry (unsaved ones of this process included)."""
        with self._cache_lock:
            return _copy(self._merged())

    def get(self, agent_id: str) -> Entry | None:
        """One agent's entry (a copy), or None. Never raises for an unreadable file."""
        entry = self.peek(agent_id)
        return _copy(entry) if entry is not None else None

    def peek(self, agent_id: str) -> Entry | None:
        """One agent's entry as held (not a copy: read it, never change it), or None."""
        with self._cache_lock:
            return self._merged().get(agent_id)

    # -- locking ----------------------------------------------------------------------------
    @contextmanager
    def _held(self, wait: float) -> Iterator[bool]:
        """Hold the process lock and the flock (re-entrant); yields False when not had within ``wait``."""
        acquired = (
            self._write_lock.acquire(timeout=wait) if wait > 0 else self._write_lock.acquire(blocking=False)
        )
        if not acquired:
            yield False
            return
        try:
            if self._depth == 0 and not self._flock(wait):
                yield False
                return
            self._depth += 1
            try:
                yield True
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._unflock()
        finally:
            self._write_lock.release()

    def _flock(self, wait: float) -> bool:
        if not self.lock_file.parent.is_dir():
            # No lock file possible (the folder is missing): no other process can write a sidecar
            # there either, so the process lock alone is enough.
            return True
        try:
            self._flock_file.acquire(timeout=max(wait, 0.0), poll_interval=_LOCK_POLL_SECONDS)
        except Timeout:
            return False
        except OSError:
            return True  # no lock file possible (a read-only folder): as above
        return True

    def _unflock(self) -> None:
        if self._flock_file.is_locked:
            self._flock_file.release()

    @contextmanager
    def exclusive(self, agent_id: str, wait: float = 0.0) -> Iterator[bool]:
        """Hold the right to calibrate ``agent_id`` (on SQLite: one calibration per file at a time).

        Yields False when another thread or process holds it and ``wait`` seconds passed.
        """
        with self._held(wait) as held:
            yield held

    # -- writing ----------------------------------------------------------------------------
    def modify(self, agent_id: str, change: Change, wait: float = 30.0) -> Saved:
        """Apply ``change`` to the freshly re-read entry of ``agent_id`` and write the sidecar.

        ``change`` gets the current entry (or None) and returns the new one (None removes it). When
        the file cannot be written the new entry stays in force in this process (``persisted`` false,
        ``problem`` says why); the next successful write of any agent saves it too.
        """
        with self._held(wait) as held:
            with self._cache_lock:
                current = self._merged(fresh=True)
                entry = change(_copy(current.get(agent_id)) if agent_id in current else None)
                self._unsaved[agent_id] = _copy(entry) if entry is not None else None
                if not held:
                    self._problem = f"{self.lock_file} is held by another process; not written"
                    return Saved(entry, False, self._problem)
                data = dict(self._file_agents())
                pending = dict(self._unsaved)
            for agent, value in pending.items():
                if value is None:
                    data.pop(agent, None)
                else:
                    data[agent] = value
            # Written outside the cache lock (readers keep reading the old file until the rename), but
            # inside the write lock, so no other writer of this file runs meanwhile.
            try:
                write_json(self.path, {"format": FORMAT, "agents": data})
            except OSError as exc:
                with self._cache_lock:
                    self._problem = f"cannot write {self.path}: {exc.strerror or exc}"
                    return Saved(entry, False, self._problem)
            with self._cache_lock:
                for agent in pending:
                    if self._unsaved.get(agent, ...) == pending[agent]:
                        self._unsaved.pop(agent, None)
                self._problem = self._read_problem = None
                self._cache, self._stamp = None, None
            return Saved(entry, True)

    def problem(self) -> str | None:
        """Why calibration state is not being saved (the last write failed), or None."""
        with self._cache_lock:
            if self._problem is not None:
                return self._problem
        folder = self.path.parent
        if not folder.is_dir():
            return f"the folder {folder} of the calibration sidecar does not exist"
        if not os.access(folder, os.W_OK):
            return f"the folder {folder} of the calibration sidecar is not writable"
        return self._read_problem
