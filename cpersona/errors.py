"""Exceptions the plain Python API raises; the MCP layer maps each to ``ok: false``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


class CPersonaError(Exception):
    """Base class. ``code`` is a short stable identifier for callers that branch on it."""

    code = "error"

    def details(self) -> dict[str, object]:
        """Extra fields this refusal adds to a failure response (besides ``error`` and ``error_code``)."""
        return {}


class InvalidInput(CPersonaError, ValueError):
    """An argument has the wrong type, range or shape."""

    code = "invalid_input"


class Rejected(InvalidInput):
    """``store`` refused the message (empty content, bad metadata, bad timestamp, ...)."""

    code = "rejected"

    def details(self) -> dict[str, object]:
        """``store`` failures also say ``result: "rejected"`` and repeat the message as ``reason``."""
        return {"result": "rejected", "reason": str(self)}


class NotFound(CPersonaError, LookupError):
    """No row with that id exists in the caller's scope (other agents' rows look absent too)."""

    code = "not_found"


class LockedRow(CPersonaError):
    """The row is locked; unlock it before editing or deleting."""

    code = "locked"


class SupersedeRefused(InvalidInput):
    """A ``supersedes`` link that would break the history: a self-reference, a cycle, or a row already
    superseded by another memory (docs/decisions.md "Supersede"). Nothing was written."""

    code = "supersede_refused"


class DatabaseUnavailable(CPersonaError):
    """The database file cannot be created or opened (bad path, permissions, not a SQLite file)."""

    code = "database_unavailable"


class NotOurDatabase(DatabaseUnavailable):
    """The file is another application's SQLite file, or damaged: refused before anything is written."""

    code = "not_our_database"


class OriginalDatabase(DatabaseUnavailable):
    """The file was written by the original CPersona: only the move-in (portability/move_in.py) opens it."""

    code = "original_database"


class SchemaTooNew(CPersonaError):
    """The database was written by a newer CPersona; we refuse rather than downgrade it."""

    code = "schema_too_new"


class DuplicateRow(CPersonaError):
    """A write would duplicate a row a unique rule protects (storage reports it; services decide)."""

    code = "duplicate"


class PersistencePaused(CPersonaError):
    """Writes are paused for this process (pause_persistence); nothing was written."""

    code = "persistence_paused"

    def details(self) -> dict[str, object]:
        """A paused write says ``persisted: false`` like a paused ``store`` does."""
        return {"persisted": False}


class CalibrationUnavailable(CPersonaError):
    """Calibration cannot run now: no embedding model is ready, or the agent has too few rows with vectors."""

    code = "calibration_unavailable"


class StorageFault(CPersonaError):
    """The database file refused a write for a reason outside the request (nothing was written)."""

    code = "storage_fault"

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path

    def details(self) -> dict[str, object]:
        """Storage faults name the file and say nothing was persisted."""
        return {"persisted": False, "db_path": self.path}


class ReadOnlyStorage(StorageFault):
    """The database is read-only for this process (permissions, immutable flag, read-only mount)."""

    code = "read_only"


class StorageFull(StorageFault):
    """The disk (or SQLite's page limit) holding the database is full."""

    code = "storage_full"


class Forbidden(CPersonaError):
    """The caller may not do this; nothing was done.

    Raised when an HTTP client's ACL grants do not cover a tool call (tool class or agent), and by the
    browser view for a missing CSRF token, a change under ``--read-only`` or an action the grants refuse.
    """

    code = "forbidden"


class Cancelled(CPersonaError):
    """A long operation stopped at a batch boundary because its caller cancelled it (``cpersona.core.work``).

    What was committed before the stop stays, whole records only; ``progress`` says how far it got and
    ``committed`` carries the operation's own counts of what stays (empty when nothing was written).
    """

    code = "cancelled"

    def __init__(self, message: str, progress: dict[str, object], committed: dict[str, object]) -> None:
        super().__init__(message)
        self.progress = progress
        self.committed = committed

    def details(self) -> dict[str, object]:
        """``cancelled: true``, ``progress: {done, total, unit}`` and the operation's committed counts."""
        return {"cancelled": True, "progress": self.progress, **self.committed}


class SecretDetected(InvalidInput):
    """The write holds a credential and CPERSONA_SECRETS is ``refuse``; nothing was stored.

    The answer names the field and the kinds found (``secrets: [{kind, count}]``), never the values.
    """

    code = "secret_detected"

    def __init__(self, what: str, kinds: Sequence[Mapping[str, object]]) -> None:
        names = ", ".join(f"{k['kind']} x{k['count']}" for k in kinds)
        super().__init__(f"{what} holds a secret ({names}); CPERSONA_SECRETS=refuse stores nothing")
        self.kinds = kinds

    def details(self) -> dict[str, object]:
        """The kinds and counts found, never the values."""
        return {"secrets": [dict(k) for k in self.kinds], "persisted": False}
