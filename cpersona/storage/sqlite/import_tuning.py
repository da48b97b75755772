"""Connection settings for the length of a bulk import, restored when it ends.

Both are per-connection pragmas of the importing thread's connection: no other connection, no
reader and nothing in the file sees them, and a crash simply drops them with the connection.

- ``cache_size``: SQLite's default page cache is 2 MB. A 1M-row import inserts into the dedup
  index on (agent, project, channel, content) at random places of a ~150 MB b-tree; with the
  default cache nearly every such insert re-reads its leaf page (and the FTS5 merges re-read
  the segments they fold). ``IMPORT_CACHE_KIB`` keeps them in memory during the import.
- ``wal_autocheckpoint``: with the default (1,000 pages, ~4 MB) a batch of 500 rows with vectors
  checkpoints every two or three batches, each an fsync of the WAL and the file, and pages written
  by every batch (index interior pages, the FTS5 structure records) are copied back each time.
  ``IMPORT_CHECKPOINT_PAGES`` checkpoints about every 64 MB instead, and the import's end runs one
  passive checkpoint (it never waits for readers).

See docs/history/decisions-rounds.md#bulk-keyword-index for the measurements.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, suppress

#: Page cache of the importing connection during an import, in KiB (128 MiB).
IMPORT_CACHE_KIB = 131_072

#: WAL pages between automatic checkpoints during an import (~64 MB at 4 KiB pages).
IMPORT_CHECKPOINT_PAGES = 16_384


@contextmanager
def import_connection(conn: sqlite3.Connection) -> Iterator[None]:
    """Run the block with the import's cache and checkpoint settings on ``conn``; restore them after."""
    cache = int(conn.execute("PRAGMA cache_size").fetchone()[0])
    checkpoint = int(conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
    conn.execute(f"PRAGMA cache_size = -{IMPORT_CACHE_KIB}")
    conn.execute(f"PRAGMA wal_autocheckpoint = {IMPORT_CHECKPOINT_PAGES}")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA wal_autocheckpoint = {checkpoint}")
        conn.execute(f"PRAGMA cache_size = {cache}")
        if not conn.in_transaction:
            # One checkpoint for what the import left in the WAL; PASSIVE never waits for a reader.
            with suppress(sqlite3.Error):
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
