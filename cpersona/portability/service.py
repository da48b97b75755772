"""The portability operations as ``Memory`` exposes them: argument checks, paths, queueing.

``Memory`` builds one ``Portability`` over its store and passes how to
reach the back-fill queue: whether rows without vectors are queued (not when
embeddings are off: the start-up sweep queues them once a model is
configured), the active model, and how to wake the worker.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, BinaryIO, Literal, TextIO

from cpersona import arguments as arg
from cpersona.config import Settings
from cpersona.core.public import public
from cpersona.core.text import format_ts, utc_now
from cpersona.core.validation import boolean, optional_str, required_str
from cpersona.core.work import Work
from cpersona.errors import Cancelled, InvalidInput, SecretDetected
from cpersona.health import secrets_check
from cpersona.health.agent_notice import agent_notice
from cpersona.portability import channel_axis, export, grants, importer, merge, move_in, original
from cpersona.portability.grants import FileScope
from cpersona.portability.paths import Place, atomic_write, locate, open_for_reading
from cpersona.result_types.operations import ExportResult, ImportResult, MergeResult, MigrateChannelAxisResult
from cpersona.runtime import persistence
from cpersona.secret_guard import Redaction
from cpersona.storage import backup_database, open_original, original_schema_version
from cpersona.storage.interface import Store

#: The path meaning standard output (export) or standard input (import), outside the export folder only.
STDIO = "-"
#: The export formats written: ours (portability/records.py), the original CPersona's (portability/original.py).
EXPORT_FORMATS = ("cpersona", "cpersona-1.0")
#: The first bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"


def _is_sqlite(handle: BinaryIO) -> bool:
    """Whether the open file starts with SQLite's header (it is rewound; a pipe is never one)."""
    if not handle.seekable():
        return False
    head = handle.read(len(SQLITE_HEADER))
    handle.seek(0)
    return head == SQLITE_HEADER


@contextmanager
def _stdout() -> Iterator[TextIO]:
    """Standard output as an export sink: flushed at the end, never closed."""
    yield sys.stdout
    sys.stdout.flush()


def _replace_guard(scope: FileScope) -> Callable[[Place], None]:
    """The ACL check run before an export replaces an existing file (grants.check_replace)."""

    def check(place: Place) -> None:
        handle, _ = open_for_reading(place)
        with handle:
            grants.check_replace(scope, handle)

    return check


class Portability:
    """Export, import, merge and channel-axis repair over one database."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        *,
        queue_backfill: Callable[[], bool],
        active_model: Callable[[], tuple[str, int] | None],
        wake: Callable[[], None],
    ) -> None:
        self.store = store
        self.settings = settings
        self.rows = store.portability_rows()
        self._queue_backfill = queue_backfill
        self._active_model = active_model
        self._wake = wake

    @public
    def export_memories(
        self,
        agent_id: Annotated[str | None, arg.Field(description="The agent whose rows are exported.")],
        output_path: Annotated[str, arg.Field(description="Path inside the export directory.")],
        include_embeddings: Annotated[bool, arg.Field(description="Also write each row's vector.")] = False,
        *,
        overwrite: Annotated[bool, arg.Field(description="Replace an existing file.")] = False,
        include_secrets: Annotated[bool, arg.Field(description="Write credentials unredacted.")] = False,
        confined: Annotated[bool, arg.API_ONLY] = True,
        work: Work | None = None,
        scope: FileScope | None = None,
        export_format: Annotated[str, arg.API_ONLY] = EXPORT_FORMATS[0],
    ) -> ExportResult:
        """Write ``agent_id``'s rows (every agent's when None) to a JSONL file; see docs/tools.md.

        ``scope`` is the HTTP client's ACL reach (grants.py): its own folder, and replacing a
        file needs admin on every agent in it. Unconfined (the CLI), ``-`` is standard output.
        ``work`` (``cpersona.core.work``) gets progress in rows and may cancel: the file is then not written.
        ``export_format`` ``cpersona-1.0`` writes the original CPersona's format (the way back to it).
        Credentials are written as their placeholders unless ``include_secrets`` (docs/secrets-and-forgetting.md).
        """
        if export_format not in EXPORT_FORMATS:
            raise InvalidInput(
                f"export_format must be one of {', '.join(EXPORT_FORMATS)}, got {export_format!r}"
            )
        theirs = export_format == "cpersona-1.0"
        agent = optional_str(agent_id, "agent_id")
        vectors = boolean(include_embeddings, "include_embeddings")
        secrets = boolean(include_secrets, "include_secrets")
        replace = boolean(overwrite, "overwrite")
        if not confined and output_path == STDIO:
            result = export.export_file(
                self.rows,
                _stdout(),
                shown=STDIO,
                agent_id=agent,
                include_embeddings=vectors,
                model=self._active_model(),
                work=work,
                original_format=theirs,
                include_secrets=secrets,
            )
        else:
            folder = scope.client if scope is not None else None
            with locate(self.settings, output_path, confined=confined, folder=folder, create=True) as place:
                guard = None if scope is None else _replace_guard(scope)
                result = export.export_file(
                    self.rows,
                    atomic_write(place, overwrite=replace, before_replace=guard),
                    shown=str(place.shown),
                    agent_id=agent,
                    include_embeddings=vectors,
                    model=self._active_model(),
                    work=work,
                    original_format=theirs,
                    include_secrets=secrets,
                )
        if agent is not None and not any(result.get("counts", {}).values()):
            notice = agent_notice(self.store.session().admin, agent)
            if notice:
                result["notice"] = notice  # an empty export of a mistyped agent id must say so
        return result

    @public
    def import_memories(
        self,
        input_path: Annotated[str, arg.Field(description="Path inside the export directory.")],
        target_agent_id: Annotated[
            str | None, arg.Field(description="File every row under this agent.")
        ] = None,
        dry_run: Annotated[bool, arg.Field(description="Only count; write nothing.")] = False,
        *,
        confined: Annotated[bool, arg.API_ONLY] = True,
        work: Work | None = None,
        scope: FileScope | None = None,
    ) -> ImportResult:
        """Read an export file into this database, idempotently; see docs/tools.md.

        With ``scope`` (an HTTP client under an ACL) the file is looked for in the client's
        folder and refused, before anything is written or reported, unless its grants cover
        every agent inside it (grants.py). Unconfined (the CLI), ``-`` is standard input.
        ``work`` (``cpersona.core.work``) gets progress in records and may cancel between batches.
        """
        target = optional_str(target_agent_id, "target_agent_id")
        dry = boolean(dry_run, "dry_run")
        if not dry:
            persistence.check_writable("import_memories")
        if not confined and input_path == STDIO:
            handle, total, shown = sys.stdin.buffer, 0, Path(STDIO)
        else:
            folder = scope.client if scope is not None else None
            with locate(self.settings, input_path, confined=confined, folder=folder) as place:
                handle, total = open_for_reading(place)
            shown = place.shown
            if _is_sqlite(handle):  # the original CPersona's database, not an export file
                return self._import_original(
                    handle, shown, target, dry, confined=confined, scope=scope, work=work
                )
            if scope is not None:
                try:
                    grants.check_import(scope, handle, target_agent=target)
                except BaseException:
                    handle.close()
                    raise
        try:
            result = importer.import_file(
                self.rows,
                self.settings,
                handle,
                source=shown,
                total=total,
                target_agent=target,
                dry_run=dry,
                queue_backfill=self._queue_backfill(),
                active_model=self._active_model(),
                work=work,
                model_label=original.environment_label(),
            )
        except Cancelled as exc:
            if exc.committed.get("queued_for_embedding"):
                self._wake()  # the batches written before the cancel need their vectors too
            raise
        if result["queued_for_embedding"]:
            self._wake()
        return result

    def _import_original(
        self,
        handle: BinaryIO,
        shown: Path,
        target: str | None,
        dry: bool,
        *,
        confined: bool,
        scope: FileScope | None,
        work: Work | None,
    ) -> ImportResult:
        """Import the original CPersona's database file (schema 13..21) like an export file of it.

        It is read from a copy: from the CLI one made through SQLite's backup API (a live WAL's
        commits included); in the export folder the file's own bytes (the folder holds no WAL).
        """
        with tempfile.TemporaryDirectory(prefix="cpersona-import-") as tmp:
            copy = Path(tmp) / "original.db"
            with handle:
                if confined:
                    with copy.open("wb") as out:
                        shutil.copyfileobj(handle, out)
            if not confined:
                backup_database(shown, copy)
            if original_schema_version(copy) is None:
                raise importer.InvalidExportFile(
                    f"{shown.name} is an SQLite database but not one of the original CPersona's (schema "
                    "13..21); to bring in another database of this edition, point CPERSONA_DB_PATH at it "
                    "and export it first"
                )
            label = (move_in.model_label_for(shown) if not confined else None) or original.environment_label()
            with open_original(copy) as source:
                if scope is not None:
                    grants.check_agents(scope, source.agent_ids(), target_agent=target)

                def import_into(lines: BinaryIO) -> ImportResult:
                    return importer.import_file(
                        self.rows,
                        self.settings,
                        lines,
                        source=shown,
                        total=0,
                        target_agent=target,
                        dry_run=dry,
                        queue_backfill=self._queue_backfill(),
                        active_model=self._active_model(),
                        work=work,
                    )

                result, _tables = move_in.import_original_database(source, import_into, model_label=label)
        if result["queued_for_embedding"]:
            self._wake()
        return result

    @public
    def merge_memories(
        self,
        source_agent_id: Annotated[str, arg.Field(description="The agent whose rows go.")],
        target_agent_id: Annotated[str, arg.Field(description="The agent that receives them.")],
        strategy: Annotated[
            Literal["skip"], arg.Field(description="Conflict rule: 'skip' keeps the target's row.")
        ] = "skip",
        mode: Annotated[
            Literal["copy", "move"],
            arg.Field(description="move also removes them from the source."),
        ] = "copy",
        dry_run: Annotated[bool, arg.Field(description="Only count; change nothing.")] = False,
        *,
        work: Work | None = None,
    ) -> MergeResult:
        """Copy or move one agent's rows to another in one transaction, skipping duplicates.

        ``work`` (``cpersona.core.work``) gets progress in source rows and may cancel: the transaction is
        then rolled back, so nothing is merged.
        """
        if not boolean(dry_run, "dry_run"):
            persistence.check_writable("merge_memories")
        source = required_str(source_agent_id, "source_agent_id")
        target = required_str(target_agent_id, "target_agent_id")
        policy = self.settings.secrets
        if policy == "refuse" and (found := secrets_check.find_secrets(self.store, source)):
            kinds = secrets_check.kinds_of(found)
            raise SecretDetected(
                f"agent {source!r}'s rows", [{"kind": k, "count": n} for k, n in sorted(kinds.items())]
            )
        queued_at = format_ts(utc_now()) if self._queue_backfill() else None
        result = merge.merge(
            self.store.maintenance_rows(),
            source,
            target,
            strategy=strategy,
            mode=mode,
            dry_run=dry_run,
            queued_at=queued_at,
            work=work,
        )
        if policy == "redact" and not dry_run:
            # The rows arrive as they were stored; the target's texts are scanned and redacted after
            # the merge's own transaction (docs/secrets-and-forgetting.md).
            hits = secrets_check.find_secrets(self.store, target)
            if hits:
                secrets_check.redact_hits(self.store, hits, queue=queued_at is not None)
                result["redacted"] = Redaction("", secrets_check.kinds_of(hits)).summary()
        if queued_at is not None and not dry_run:
            self._wake()
        return result

    @public
    def migrate_channel_axis(
        self,
        agent_id: Annotated[str | None, arg.Field(description="Omit for every agent.")] = None,
        dry_run: Annotated[bool, arg.Field(description="Only count (default).")] = True,
        globalize_unrecoverable: Annotated[
            bool, arg.Field(description="Move unrecoverable rows to channel ''.")
        ] = False,
        bridge_channels: Annotated[
            Sequence[Annotated[str, arg.Field(min_length=1)]] | None,
            arg.Field(min_length=1, max_length=50, description="Bridge channel names."),
        ] = None,
    ) -> MigrateChannelAxisResult:
        """Move rows off bridge channels onto the channel in their session id; see channel_axis.py."""
        if isinstance(bridge_channels, str):
            raise InvalidInput("bridge_channels must be a list of channel names")
        # Forced while paused (docs/tools.md#pause_persistence).
        dry, note = persistence.effective_dry_run(boolean(dry_run, "dry_run"))
        result = channel_axis.migrate(
            self.store.maintenance_rows(),
            agent_id=agent_id,
            dry_run=dry,
            globalize_unrecoverable=globalize_unrecoverable,
            bridge_channels=bridge_channels,
        )
        if note:
            result["note"] = note
        return result
