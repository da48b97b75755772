"""Declared associations in export files: one ``link`` line per link, after every row, ids remapped on import.

An export names both ends by their ``source_id`` (the id in the exporting database) and writes the
links last, so an import has placed every memory when it reads them. The import maps each memory
record's ``source_id`` to the row it became (inserted, or the duplicate already there) and declares
the link between those; a link naming a memory the file did not carry (or that failed) is dropped
and counted. Files with links say ``version: 2`` in their header (older readers refuse them clearly
instead of rejecting every link line); files without links stay version 1, byte for byte.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cpersona.errors import InvalidInput
from cpersona.services.links import entity_key, entity_name, parse_associations
from cpersona.storage.interface import PortabilityRows
from cpersona.storage.port_records import ImportedMemory, ImportRecord

#: Links written per transaction on import.
BATCH = 500


def link_line(cols: dict[str, Any]) -> dict[str, Any]:
    """The export line of one link (``to_source_id`` or ``entity``)."""
    line: dict[str, Any] = {"type": "link", "from_source_id": cols["from_id"], "relation": cols["relation"]}
    if cols.get("to_id") is not None:
        line["to_source_id"] = cols["to_id"]
    else:
        line["entity"] = cols["entity"]
    return line


@dataclass(frozen=True)
class LinkRecord:
    """A validated link line: source ids as in the exporting database."""

    from_source_id: int
    relation: str
    to_source_id: int | None
    entity: str | None


def _source_id(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"'{name}' must be a positive integer (a memory's source_id)")
    return value


def parse_link(obj: dict[str, Any]) -> LinkRecord:
    """Validate one ``link`` line (the same rules as declare_associations). Raises InvalidInput."""
    extra = sorted(
        str(k)[:40] for k in obj if k not in {"type", "from_source_id", "relation", "to_source_id", "entity"}
    )
    if extra:
        raise InvalidInput(f"link record has unknown keys {extra}")
    from_id = _source_id(obj.get("from_source_id"), "from_source_id")
    if ("to_source_id" in obj) == ("entity" in obj):
        raise InvalidInput("a link record needs exactly one of 'to_source_id' or 'entity'")
    # parse_associations checks the relation name; the target is checked here, by source id.
    relation = parse_associations([{"relation": obj.get("relation"), "entity": "x"}])[0].relation
    if "entity" in obj:
        return LinkRecord(from_id, relation, None, entity_name(obj["entity"], "entity"))
    to_id = _source_id(obj.get("to_source_id"), "to_source_id")
    if to_id == from_id:
        raise InvalidInput("a link record links a memory to itself")
    return LinkRecord(from_id, relation, to_id, None)


@dataclass
class LinkImport:
    """What one import does with link lines: the source-id map, then links declared in batches."""

    rows: PortabilityRows
    dry_run: bool
    placed: dict[int, int] = field(default_factory=dict)
    pending: list[tuple[int, str, int | None, str | None, str | None]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: {"inserted": 0, "duplicates": 0, "dropped": 0})
    seen_any: bool = False

    def note_rows(self, batch: Sequence[ImportRecord], source_ids: Sequence[Any]) -> None:
        """After a batch is written: remember which row each memory record became."""
        memories = [(r, s) for r, s in zip(batch, source_ids, strict=True) if isinstance(r, ImportedMemory)]
        usable = [(r, s) for r, s in memories if isinstance(s, int) and not isinstance(s, bool)]
        if not usable:
            return
        if self.dry_run:  # nothing was written: a record stands for itself
            for _record, source in usable:
                self.placed[source] = source
            return
        found = self.rows.memory_ids([r.row for r, _ in usable])
        for (_record, source), row_id in zip(usable, found, strict=True):
            if row_id is not None:
                self.placed[source] = row_id

    def add(self, record: LinkRecord) -> None:
        """Queue one link (dropped when an end is not a memory this import placed)."""
        self.seen_any = True
        from_id = self.placed.get(record.from_source_id)
        to_id = None if record.to_source_id is None else self.placed.get(record.to_source_id)
        if from_id is None or (record.to_source_id is not None and to_id is None) or from_id == to_id:
            self.counts["dropped"] += 1
            return
        key = None if record.entity is None else entity_key(record.entity)
        self.pending.append((from_id, record.relation, to_id, record.entity, key))
        if len(self.pending) >= BATCH:
            self.flush()

    def flush(self) -> None:
        """Declare the queued links in one transaction (a dry run only counts them)."""
        if not self.pending:
            return
        if self.dry_run:
            self.counts["inserted"] += len(self.pending)
        else:
            added = self.rows.write_links(self.pending)
            self.counts["inserted"] += sum(added)
            self.counts["duplicates"] += len(added) - sum(added)
        self.pending.clear()
