"""What moving in from the original CPersona may ask of storage (the engine reads its SQLite file)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol


class OriginalRows(Protocol):
    """An original database opened read-only; ``with`` it for one snapshot of every count and row."""

    def __enter__(self) -> OriginalRows: ...

    def __exit__(self, *exc: object) -> None: ...

    def schema_version(self) -> int:
        """The original's recorded schema version."""
        ...

    def table_counts(self) -> dict[str, int]:
        """Rows per table (its full-text index tables left out)."""
        ...

    def fingerprint(self) -> tuple[Any, ...]:
        """A value any write of the original's would change (to see it was not written during a move)."""
        ...

    def agent_ids(self) -> list[str]:
        """Every agent id its memories, episodes and profiles name (for the grant check of an import)."""
        ...

    def superseded(self) -> list[dict[str, Any]]:
        """Its declared corrections between memories: ``older``, ``newer`` (its ids), ``at``."""
        ...

    def declared_links(self) -> Iterator[dict[str, Any]]:
        """Its declarations that start at a memory: ``source_table`` (its table), ``from_id``, ``relation``,
        ``to_id`` or ``entity``."""
        ...

    def rows(self, table: str) -> Iterator[dict[str, Any]]:
        """Every row of ``memories``, ``episodes`` or ``profiles``, by id, as a dict of its columns."""
        ...
