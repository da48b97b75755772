"""Exceptions the plain Python API raises; the MCP layer maps each to ``ok: false``."""

from __future__ import annotations


class CPersonaError(Exception):
    """Base class. ``code`` is a short stable identifier for callers that branch on it."""

    code = "error"


class InvalidInput(CPersonaError, ValueError):
    """An argument has the wrong type, range or shape."""

    code = "invalid_input"


class NotFound(CPersonaError, LookupError):
    """No row with that id exists in the caller's scope (other agents' rows look absent too)."""

    code = "not_found"


class LockedRow(CPersonaError):
    """The row is locked; unlock it before editing or deleting."""

    code = "locked"


class DatabaseUnavailable(CPersonaError):
    """The database file cannot be created or opened (bad path, permissions, not a SQLite file)."""

    code = "database_unavailable"


class SchemaTooNew(CPersonaError):
    """The database was written by a newer CPersona; we refuse rather than downgrade it."""

    code = "schema_too_new"


class PersistencePaused(CPersonaError):
    """Writes are paused for this process (pause_persistence)."""

    code = "persistence_paused"
