"""Import: read an export file line by line and write its records in bounded batches.

Memory stays bounded whatever the file size: one line is read at a time (a
line over ``MAX_LINE_BYTES`` is reported and skipped without being held), and
records are written ``BATCH`` per transaction. Each record is validated whole
before anything is written, and a record is one INSERT, so it lands whole or
not at all. A bad line is reported by number and skipped; the rest goes on.
A cancel (``cpersona.core.work``) is honoured between batches: the batches written stay, and the
``Cancelled`` failure carries their counts.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

from cpersona.config import Settings
from cpersona.core.text import format_ts, utc_now
from cpersona.core.work import Work
from cpersona.errors import CPersonaError, InvalidInput
from cpersona.portability import original, records
from cpersona.portability.link_records import LinkImport, parse_link
from cpersona.result_types.operations import ImportResult, ImportTally
from cpersona.secret_guard import Redaction
from cpersona.storage.interface import PortabilityRows
from cpersona.storage.port_records import (
    DUPLICATE,
    INSERTED,
    KEPT,
    UPDATED,
    ImportedEpisode,
    ImportedMemory,
    ImportRecord,
)
from cpersona.storage.supersede_interface import SUPERSEDE_RECORD
from cpersona.storage.values import NewMemory

#: Longest line read; longer ones are reported and skipped (a capped record is far smaller).
MAX_LINE_BYTES = 8 * 1024 * 1024
#: Records written per transaction.
BATCH = 500
#: Line errors listed in the result (``error_count`` counts them all).
MAX_LISTED_ERRORS = 20


class InvalidExportFile(CPersonaError):
    """The file is not a CPersona export (missing or unreadable header)."""

    code = "invalid_file"


@dataclass
class _Tally:
    lines: int = 0
    truncated: int = 0
    vectors_dropped: int = 0
    queued: int = 0
    redacted: Counter[str] = field(default_factory=Counter)
    errors: list[dict[str, Any]] = field(default_factory=list)
    error_count: int = 0
    counts: dict[str, dict[str, int]] = field(
        default_factory=lambda: {
            "memories": {INSERTED: 0, "duplicates": 0},
            "episodes": {INSERTED: 0, "duplicates": 0},
            "profiles": {INSERTED: 0, UPDATED: 0, KEPT: 0},
        }
    )

    def error(self, line: int, message: str) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_LISTED_ERRORS:
            self.errors.append({"line": line, "error": message[:300]})

    @property
    def records(self) -> int:
        """Records handled so far (inserted, duplicate, updated or kept)."""
        return sum(sum(c.values()) for c in self.counts.values())

    @property
    def new(self) -> int:
        """Records that were (or, in a dry run, would be) inserted or replace a profile."""
        return sum(c.get(INSERTED, 0) + c.get(UPDATED, 0) for c in self.counts.values())

    def outcome(self, record: ImportRecord, outcome: str) -> None:
        table = _table(record)
        key = "duplicates" if outcome == DUPLICATE else outcome
        self.counts[table][key] += 1


def _table(record: ImportRecord) -> str:
    if isinstance(record, ImportedMemory):
        return "memories"
    return "episodes" if isinstance(record, ImportedEpisode) else "profiles"


def read_lines(handle: BinaryIO) -> Iterator[tuple[int, bytes | None]]:
    """(line number, bytes) per line; bytes None for a line longer than MAX_LINE_BYTES."""
    number = 0
    while True:
        raw = handle.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):  # skip the rest of the oversize line
                raw = handle.readline(MAX_LINE_BYTES)
            yield number, None
            continue
        yield number, raw


def _position(handle: BinaryIO) -> int:
    """Bytes read so far (0 from a pipe, which has no position)."""
    return handle.tell() if handle.seekable() else 0


def _decode(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"not UTF-8 text (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"not valid JSON: {exc.msg} at column {exc.colno}") from exc


class _DryRunKeys:
    """Dedup keys of the records a dry run would insert, so in-file repeats count as duplicates.

    Only 16-byte digests are kept (about 100 bytes per record, the one thing a
    dry run holds in memory that a real import does not).
    """

    def __init__(self) -> None:
        self.seen: set[bytes] = set()

    @staticmethod
    def _digest(*parts: str) -> bytes:
        return hashlib.blake2b("\x1f".join(parts).encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def check(self, record: ImportRecord) -> bool:
        """True when an earlier record of this run has the same dedup key; otherwise remember it."""
        if isinstance(record, ImportedMemory):
            r = record.row
            keys = [self._digest("c", r.agent_id, r.project_id, r.channel, r.content)]
            if r.msg_id:
                keys.append(self._digest("m", r.agent_id, r.project_id, r.msg_id))
        elif isinstance(record, ImportedEpisode):
            keys = [self._digest("e", record.agent_id, record.project_id, record.channel, record.summary)]
        else:
            keys = [self._digest("p", record.agent_id, record.project_id, record.user_id)]
        if any(k in self.seen for k in keys):
            return True
        self.seen.update(keys)
        return False


def import_file(
    rows: PortabilityRows,
    settings: Settings,
    handle: BinaryIO,
    *,
    source: Path,
    total: int,
    target_agent: str | None,
    dry_run: bool,
    queue_backfill: bool,
    active_model: tuple[str, int] | None,
    work: Work | None = None,
    model_label: str | None = None,
) -> ImportResult:
    """Import the open export file ``handle`` (``source`` names it, ``total`` is its size, 0 unknown).

    The file is ours or the original CPersona's (``cpersona-export/1.x``, read through
    portability/original.py; ``model_label`` names the model of its unlabelled vectors).

    Returns counts per table, truncations, dropped vectors, line errors and rows queued for
    embedding. The handle is closed. ``work`` gets a progress report (records handled, of the
    header's counts) after each batch and may stop the import before the next one
    (``Cancelled``, with the counts of what was written).
    """
    tally = _Tally()
    keys = _DryRunKeys() if dry_run else None
    # Supersede links come before the memories in an export: keep the dedup identity of only the
    # rows they name, and write the links once every memory is in (docs/tools.md#export_memories).
    supersedes: list[tuple[int, int, str]] = []
    # Expiries and retirements are set once every memory is in, on the rows found by their dedup keys.
    lifecycles: list[tuple[NewMemory, str | None, str | None, str | None]] = []
    named: set[int] = set()
    identities: dict[int, NewMemory] = {}
    head: dict[str, Any] | None = None
    batch: list[ImportRecord] = []
    batch_sources: list[Any] = []  # each record's source_id (links are remapped through them)
    links = LinkImport(rows, dry_run)
    translator: original.ExportTranslator | None = None
    now = format_ts(utc_now())
    work = work or Work()
    verb = "checked" if dry_run else "imported"
    kept = (
        "a dry run writes nothing"
        if dry_run
        else "the records of the batches before it were written whole and stay (importing the file "
        "again finishes the job: what is already there is skipped)"
    )

    def flush(position: int) -> None:
        if not batch:
            return
        if keys is not None:
            outcomes = [
                DUPLICATE if keys.check(r) else o for r, o in zip(batch, rows.probe_batch(batch), strict=True)
            ]
        else:
            outcomes, queued = rows.write_batch(
                batch, queued_at=now if queue_backfill else None, active_model=active_model
            )
            tally.queued += queued
        for record, outcome in zip(batch, outcomes, strict=True):
            tally.outcome(record, outcome)
        if _has_links(head):
            links.note_rows(batch, batch_sources)
        batch.clear()
        batch_sources.clear()
        work.report(
            tally.records,
            _records_in(head),
            "records",
            f"{tally.records:,} records {verb} ({tally.new:,} new); {_bytes_read(position, total)}",
        )

    # On PostgreSQL into a fresh database the keyword postings' index is built once, when the block ends.
    with handle, nullcontext(False) if dry_run else rows.bulk_load():
        for number, raw in read_lines(handle):
            tally.lines = number
            if raw is None:
                tally.error(number, f"line longer than {MAX_LINE_BYTES} bytes")
                continue
            if not raw.strip():
                continue
            try:
                obj = _decode(raw)
                if head is None:
                    if original.is_original_header(obj):
                        translator = original.ExportTranslator(obj, model_label)
                        obj = translator.header
                    head = records.check_header(obj)
                    continue
                if translator is not None:
                    obj = translator.line(obj)
                    if obj is None:
                        continue  # a record type with no home here: counted, reported below
                if isinstance(obj, dict) and obj.get("type") == "header":
                    raise InvalidInput("a second header line")
                if isinstance(obj, dict) and obj.get("type") == "link":
                    flush(_position(handle))  # every memory before it is placed first
                    links.add(parse_link(obj))
                    continue
                if isinstance(obj, dict) and obj.get("type") == SUPERSEDE_RECORD:
                    link = records.parse_supersede(obj)
                    supersedes.append(link)
                    named.update(link[:2])
                    continue
                parsed = records.parse_record(obj, target_agent=target_agent, settings=settings, now=now)
            except InvalidInput as exc:
                if head is None:
                    raise InvalidExportFile(f"{source.name}: {exc}") from exc
                tally.error(number, str(exc))
                continue
            tally.truncated += int(parsed.truncated)
            tally.redacted.update(parsed.redacted)
            tally.vectors_dropped += int(parsed.vector_dropped)
            source_id = obj.get("source_id")
            if parsed.lifecycle is not None and isinstance(parsed.record, ImportedMemory):
                lifecycles.append((replace(parsed.record.row, embedding=None), *parsed.lifecycle))
            if named and isinstance(parsed.record, ImportedMemory) and source_id in named:
                identities[source_id] = replace(parsed.record.row, embedding=None)
            batch.append(parsed.record)
            batch_sources.append(obj.get("source_id"))
            if len(batch) >= BATCH:
                flush(_position(handle))
                work.checkpoint("import_memories", kept, lambda: _tally_result(tally, dry_run))
        flush(_position(handle))
        links.flush()
    if head is None:
        raise InvalidExportFile(f"{source.name} is empty")
    if links.seen_any:
        tally.counts["links"] = links.counts
    if translator is not None:
        translator.finish()
        original_counts(tally.counts, translator.not_carried, translator.vectors.not_kept)
    if supersedes:
        _link(rows, supersedes, identities, dry_run, tally, work, kept)
    shown_header = {"original_format": translator.original_version} if translator is not None else {}
    if lifecycles:
        tally.counts["lifecycle"] = {
            "read": len(lifecycles),
            "set": 0 if dry_run else rows.mark_lifecycle(lifecycles),
        }
    return {
        "ok": True,
        "path": str(source),
        "target_agent_id": target_agent,
        "header": shown_header
        | {
            k: head.get(k)
            for k in (
                "version",
                "exported_at",
                "source_schema_version",
                "agent_id",
                "include_embeddings",
                "embedding_model",
                "embedding_dim",
            )
        },
        **_tally_result(tally, dry_run),
    }


def original_counts(counts: dict[str, dict[str, int]], not_carried: Any, not_kept: Any) -> None:
    """Name what an original file held that is not here: record types or tables with no home
    (``not_carried``), vectors of a model we do not know (``vectors_not_kept``, their rows queued)."""
    if not_carried:
        counts["not_carried"] = dict(not_carried)
    if not_kept:
        counts["vectors_not_kept"] = dict(not_kept)


def _has_links(head: dict[str, Any] | None) -> bool:
    """Whether the header announces link lines (only then is each memory's row looked up)."""
    counts = (head or {}).get("counts")
    return isinstance(counts, dict) and bool(counts.get("links"))


def _bytes_read(position: int, total: int) -> str:
    return f"{position:,} of {total:,} bytes read" if total > 0 else f"{position:,} bytes read"


def _records_in(head: dict[str, Any] | None) -> int | None:
    """The records the header says the file holds (None when it does not say)."""
    counts = (head or {}).get("counts")
    if not isinstance(counts, dict):
        return None
    values = [counts.get(k) for k in ("memories", "episodes", "profiles")]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
        return None
    return sum(v for v in values if isinstance(v, int))


def _link(
    rows: PortabilityRows,
    links: list[tuple[int, int, str]],
    identities: dict[int, NewMemory],
    dry_run: bool,
    tally: _Tally,
    work: Work,
    kept: str,
) -> None:
    """Write the file's supersede links between the rows now in the database, ``BATCH`` pairs per
    transaction (the write lock is free between them, so another server's store waits for one
    batch, not the file), cancellable at a batch boundary with whole links only; the running
    counts (read / linked / skipped) are ``tally.counts["supersede_links"]`` throughout."""
    pairs = [(identities[o], identities[n], at) for o, n, at in links if o in identities and n in identities]
    counts = {"read": len(links), "linked": 0, "skipped": 0 if dry_run else len(links) - len(pairs)}
    tally.counts["supersede_links"] = counts
    if dry_run:
        return
    for start in range(0, len(pairs), BATCH):
        work.checkpoint(
            "import_memories",
            kept + "; supersede links are written whole, batch by batch",
            lambda: _tally_result(tally, dry_run),
        )
        linked, skipped = rows.link_superseded(pairs[start : start + BATCH])
        counts["linked"] += linked
        counts["skipped"] += skipped
        work.report(  # counted on from the records, so progress only ever grows (MCP asks it)
            tally.records + start + len(pairs[start : start + BATCH]),
            None,
            "records and supersede links",
            f"{counts['linked']:,} of {len(pairs):,} supersede links written",
        )


def _tally_result(tally: _Tally, dry_run: bool) -> ImportTally:
    """The counts part of the result (also what a cancelled import reports as written)."""
    return {
        "dry_run": dry_run,
        "lines": tally.lines,
        "counts": tally.counts,
        "truncated": tally.truncated,
        "vectors_dropped": tally.vectors_dropped,
        "queued_for_embedding": tally.queued,
        "error_count": tally.error_count,
        "errors": tally.errors,
        "redacted": Redaction("", dict(tally.redacted)).summary(),
    }
