"""Moving in from the original CPersona: its database becomes ours, at the same path.

Any command that opens the database (``Memory``) calls ``move_in_if_original`` first. When the file at
``CPERSONA_DB_PATH`` is the original's (storage/sqlite/file_kind.py), then, under a lock file so two
servers started together move it once:

1. a consistent copy of it is written beside it with SQLite's backup API
   (``<name>.original-v<N>-<UTC stamp>.db``): the original's own file, which its own server opens;
2. its calibration sidecar (``<db>.calibration.json``, the name ours uses too) moves beside the backup:
   its thresholds were measured on the original's score, which is not ours, so this edition calibrates
   again (docs/moving-from-cpersona.md);
3. every memory, episode and profile of the backup is imported into a new file
   (``<name>.moving-in``) through the importer, so the validation and dedup rules of an import apply;
4. the new file replaces the original at its path (the host entry keeps working unchanged), and a
   report (``<name>.moved-in.json``) lists counts, vectors kept or queued, and what had no home here.

The move is in place after the backup, not into a new file name: the path is what every host entry
names. A failure before step 4 leaves the original where it was (the partial new file is removed).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, BinaryIO, cast

from filelock import FileLock

from cpersona.config import Settings
from cpersona.core.text import utc_now
from cpersona.errors import DatabaseUnavailable
from cpersona.portability import importer, original
from cpersona.result_types.operations import ImportResult
from cpersona.storage import (
    backup_database,
    open_original,
    open_store,
    original_schema_version,
    remove_database,
    settle_database,
)
from cpersona.storage.original_interface import OriginalRows

log = logging.getLogger("cpersona.move_in")


class LineStream:
    """Our export lines from an iterator of dicts, read by the importer like a file (no seeking)."""

    def __init__(self, lines: Iterator[dict[str, Any]], header: dict[str, Any]) -> None:
        self._lines = lines
        self._header: dict[str, Any] | None = header

    def readline(self, limit: int = -1) -> bytes:
        """The next line, encoded; b'' at the end."""
        if self._header is not None:
            obj, self._header = self._header, None
        else:
            found = next(self._lines, None)
            if found is None:
                return b""
            obj = found
        return json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n"

    def seekable(self) -> bool:
        """No position: progress is counted in records."""
        return False

    def close(self) -> None:
        """Nothing to release (the connection is the caller's)."""

    def __enter__(self) -> LineStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def import_original_database(
    source: OriginalRows,
    import_into: Callable[[BinaryIO], ImportResult],
    *,
    model_label: str | None,
) -> tuple[ImportResult, dict[str, int]]:
    """Import an open original database through ``import_into(handle)`` (the importer, bound by the
    caller); returns its result, with the tables that have no home here under ``counts["not_carried"]``
    and the vectors left behind under ``counts["vectors_not_kept"]``, and the original's rows per table."""
    counts = source.table_counts()
    vectors = original.VectorCarry(model_label)
    links = original.LinkCarry()
    header = {
        "type": "header",
        "format": "cpersona-export",
        "version": 2,  # with link lines: the importer maps each memory's source_id to its row
        "agent_id": None,
        "counts": {t: counts.get(t, 0) for t in ("memories", "episodes", "profiles")}
        | {"links": counts.get("relations", 0) + counts.get("entity_mentions", 0)},
    }
    result = import_into(cast(BinaryIO, LineStream(original.database_lines(source, vectors, links), header)))
    importer.original_counts(result["counts"], original.not_carried_tables(counts, links), vectors.not_kept)
    result["header"]["original_schema_version"] = source.schema_version()
    return result, counts


def model_label_for(db_path: Path) -> str | None:
    """The model the original's vectors were made with, when it recorded one: its sidecar, else its env."""
    return original.sidecar_label(db_path) or original.environment_label()


def move_in_if_original(path: Path, settings: Settings) -> dict[str, Any] | None:
    """Move the original's database at ``path`` in (see the module doc); None when it is not one."""
    if original_schema_version(path) is None:
        return None
    with _exclusive(path):
        version = original_schema_version(path)  # another process may have moved it in meanwhile
        if version is None:
            return None
        return _move(path, version, settings)


@contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    lock_path = path.with_name(path.name + ".move-in.lock")
    with FileLock(lock_path):  # waits for another server moving the same file in
        yield
    with suppress(OSError):
        lock_path.unlink()


def backup_path(path: Path, version: int) -> Path:
    """Where the original's copy goes: beside it, named after its schema and the moment."""
    stamp = utc_now().strftime("%Y%m%dT%H%M%SZ")
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    return path.with_name(f"{stem}.original-v{version}-{stamp}{path.suffix or '.db'}")


def _move(path: Path, version: int, settings: Settings) -> dict[str, Any]:
    backup = backup_path(path, version)
    log.warning(
        "%s was written by the original CPersona (schema version %s): moving it in; a copy is kept at %s",
        path,
        version,
        backup,
    )
    backup_database(path, backup)
    label = model_label_for(path)
    building = path.with_name(path.name + ".moving-in")
    remove_database(building)
    try:
        store = open_store(building)
        try:

            def import_into(handle: BinaryIO) -> ImportResult:
                return importer.import_file(
                    store.portability_rows(),
                    settings,
                    handle,
                    source=path,
                    total=0,
                    target_agent=None,
                    dry_run=False,
                    queue_backfill=settings.embedding_mode != "none",
                    active_model=None,
                )

            with open_original(backup) as source:
                result, tables = import_original_database(source, import_into, model_label=label)
                moved = source.fingerprint()
        finally:
            store.close()
        settle_database(path)
        with open_original(path) as now:
            if now.fingerprint() != moved:  # its server wrote while this one read the backup
                raise DatabaseUnavailable(
                    f"{path} was written to while it was being moved in: stop the original CPersona server "
                    "that uses it, then start this one again. The file was left as it was."
                )
        sidecar = Path(f"{path}.calibration.json")
        if sidecar.exists():
            os.replace(sidecar, Path(f"{backup}.calibration.json"))
        os.replace(building, path)
    except BaseException:
        remove_database(building)
        raise
    report = _report(path, backup, version, tables, result, label, sidecar_moved=sidecar.name)
    _log_report(report)
    return report


def _report(
    path: Path,
    backup: Path,
    version: int,
    tables: dict[str, int],
    result: ImportResult,
    label: str | None,
    *,
    sidecar_moved: str,
) -> dict[str, Any]:
    counts = result["counts"]
    report: dict[str, Any] = {
        "moved_in_at": utc_now().isoformat(),
        "database": str(path),
        "backup": str(backup),
        "original_schema_version": version,
        "original_rows": {t: tables.get(t, 0) for t in ("memories", "episodes", "profiles")},
        "imported": {
            t: counts[t]
            for t in ("memories", "episodes", "profiles", "links", "supersede_links")
            if t in counts
        },
        "vector_model_label": label,
        "vectors_not_kept": counts.get("vectors_not_kept", {}),
        "queued_for_embedding": result["queued_for_embedding"],
        "truncated": result["truncated"],
        "not_carried": counts.get("not_carried", {}),
        "calibration": (
            f"the original's thresholds ({sidecar_moved}) were measured on its own score; moved beside "
            "the backup, and this edition calibrates again"
            if Path(f"{backup}.calibration.json").exists()
            else "no calibration sidecar"
        ),
        "error_count": result["error_count"],
        "errors": result["errors"],
    }
    target = path.with_name(path.name + ".moved-in.json")
    with suppress(OSError):
        target.write_text(json.dumps(report, indent=2), encoding="utf-8")
    report["report"] = str(target)
    return report


def _log_report(report: dict[str, Any]) -> None:
    imported = report["imported"]
    log.warning(
        "moved in: %s memories, %s episodes, %s profiles (inserted/duplicates: %s); %s rows queued for "
        "embedding; report at %s",
        imported["memories"].get("inserted", 0),
        imported["episodes"].get("inserted", 0),
        sum(imported["profiles"].values()),
        json.dumps(imported),
        report["queued_for_embedding"],
        report["report"],
    )
    if report["vectors_not_kept"]:
        log.warning(
            "vectors not kept (their model is not one this edition runs; the rows are queued for embedding): %s",
            json.dumps(report["vectors_not_kept"]),
        )
    if report["not_carried"]:
        log.warning(
            "no home here for (kept in the backup %s): %s",
            report["backup"],
            json.dumps(report["not_carried"]),
        )
    if report["error_count"]:
        log.warning(
            "%s rows could not be imported (kept in the backup): %s",
            report["error_count"],
            json.dumps(report["errors"]),
        )
