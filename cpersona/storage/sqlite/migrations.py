"""Numbered, forward-only schema migrations.

Each migration runs in its own transaction and records its version in
``schema_version``; re-running is a no-op. A database whose version is newer
than the newest migration known here is refused (``SchemaTooNew``), never
silently downgraded.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from cpersona.core.text import format_ts, utc_now
from cpersona.errors import SchemaTooNew
from cpersona.storage.sqlite.db import Database

_V1 = """
CREATE TABLE memories (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id TEXT NOT NULL,
    project_id TEXT NOT NULL DEFAULT '',
    channel TEXT NOT NULL DEFAULT '',
    msg_id TEXT NOT NULL DEFAULT '',
    content TEXT NOT NULL,
    source TEXT,
    metadata TEXT,
    timestamp TEXT NOT NULL,
    created_at TEXT NOT NULL,
    embedding BLOB,
    embedding_model TEXT,
    embedding_dim INTEGER,
    recall_count INTEGER NOT NULL DEFAULT 0,
    last_recalled_at TEXT,
    locked INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX memories_dedup_content ON memories(agent_id, project_id, channel, content);
CREATE UNIQUE INDEX memories_dedup_msg_id ON memories(agent_id, project_id, msg_id) WHERE msg_id <> '';
CREATE INDEX memories_scope ON memories(agent_id, project_id, channel, id);
CREATE INDEX memories_created ON memories(created_at, id);

CREATE TABLE episodes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id TEXT NOT NULL,
    project_id TEXT NOT NULL DEFAULT '',
    channel TEXT NOT NULL DEFAULT '',
    summary TEXT NOT NULL,
    keywords TEXT NOT NULL DEFAULT '',
    embedding BLOB,
    embedding_model TEXT,
    embedding_dim INTEGER,
    start_time TEXT,
    end_time TEXT,
    resolved INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE INDEX episodes_scope ON episodes(agent_id, project_id, channel, created_at);

CREATE TABLE profiles (
    agent_id TEXT NOT NULL,
    project_id TEXT NOT NULL DEFAULT '',
    user_id TEXT NOT NULL DEFAULT '',
    content TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (agent_id, project_id, user_id)
);

CREATE TABLE pending_memory_tasks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    target_table TEXT NOT NULL,
    target_id INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    not_before TEXT NOT NULL,
    last_error TEXT,
    created_at TEXT NOT NULL,
    UNIQUE (kind, target_table, target_id)
);

-- Counters other processes read to learn that stored vectors changed.
CREATE TABLE index_state (name TEXT PRIMARY KEY, generation INTEGER NOT NULL DEFAULT 0);
INSERT INTO index_state(name, generation) VALUES ('memories', 0), ('episodes', 0);

CREATE VIRTUAL TABLE memories_fts USING fts5(
    content, content='memories', content_rowid='id', tokenize='trigram'
);
CREATE VIRTUAL TABLE episodes_fts USING fts5(
    summary, keywords, content='episodes', content_rowid='id', tokenize='trigram'
);

CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.id, old.content);
    UPDATE index_state SET generation = generation + 1 WHERE name = 'memories';
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF content ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO memories_fts(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER memories_vector_changed
AFTER UPDATE OF embedding, embedding_model, agent_id, project_id, channel ON memories BEGIN
    UPDATE index_state SET generation = generation + 1 WHERE name = 'memories';
END;

CREATE TRIGGER episodes_fts_insert AFTER INSERT ON episodes BEGIN
    INSERT INTO episodes_fts(rowid, summary, keywords) VALUES (new.id, new.summary, new.keywords);
END;
CREATE TRIGGER episodes_fts_delete AFTER DELETE ON episodes BEGIN
    INSERT INTO episodes_fts(episodes_fts, rowid, summary, keywords)
        VALUES ('delete', old.id, old.summary, old.keywords);
    UPDATE index_state SET generation = generation + 1 WHERE name = 'episodes';
END;
CREATE TRIGGER episodes_fts_update AFTER UPDATE OF summary, keywords ON episodes BEGIN
    INSERT INTO episodes_fts(episodes_fts, rowid, summary, keywords)
        VALUES ('delete', old.id, old.summary, old.keywords);
    INSERT INTO episodes_fts(rowid, summary, keywords) VALUES (new.id, new.summary, new.keywords);
END;
CREATE TRIGGER episodes_vector_changed
AFTER UPDATE OF embedding, embedding_model, agent_id, project_id, channel ON episodes BEGIN
    UPDATE index_state SET generation = generation + 1 WHERE name = 'episodes';
END;
"""

# Version 3: a change log the
# in-memory vector indexes read, so one changed row costs one row, never a full reload.
# Inserts need no entry (a new id is above every id an index has seen); updates of a
# vector or its scope, and deletes, append (table, row id). The log keeps its newest
# 65,536 entries; an index that fell further behind reloads in full.
_V3 = """
CREATE TABLE vector_changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tbl TEXT NOT NULL,
    row_id INTEGER NOT NULL
);
CREATE TRIGGER vector_changes_prune AFTER INSERT ON vector_changes WHEN new.seq % 1024 = 0 BEGIN
    DELETE FROM vector_changes WHERE seq <= new.seq - 65536;
END;
DROP TRIGGER memories_vector_changed;
CREATE TRIGGER memories_vector_changed
AFTER UPDATE OF embedding, embedding_model, embedding_dim, agent_id, project_id, channel ON memories
WHEN old.embedding IS NOT new.embedding OR old.embedding_model IS NOT new.embedding_model
    OR old.embedding_dim IS NOT new.embedding_dim OR old.agent_id IS NOT new.agent_id
    OR old.project_id IS NOT new.project_id OR old.channel IS NOT new.channel
BEGIN
    INSERT INTO vector_changes(tbl, row_id) VALUES ('memories', new.id);
END;
DROP TRIGGER memories_fts_delete;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO vector_changes(tbl, row_id) VALUES ('memories', old.id);
END;
DROP TRIGGER episodes_vector_changed;
CREATE TRIGGER episodes_vector_changed
AFTER UPDATE OF embedding, embedding_model, embedding_dim, agent_id, project_id, channel ON episodes
WHEN old.embedding IS NOT new.embedding OR old.embedding_model IS NOT new.embedding_model
    OR old.embedding_dim IS NOT new.embedding_dim OR old.agent_id IS NOT new.agent_id
    OR old.project_id IS NOT new.project_id OR old.channel IS NOT new.channel
BEGIN
    INSERT INTO vector_changes(tbl, row_id) VALUES ('episodes', new.id);
END;
DROP TRIGGER episodes_fts_delete;
CREATE TRIGGER episodes_fts_delete AFTER DELETE ON episodes BEGIN
    INSERT INTO episodes_fts(episodes_fts, rowid, summary, keywords)
        VALUES ('delete', old.id, old.summary, old.keywords);
    INSERT INTO vector_changes(tbl, row_id) VALUES ('episodes', old.id);
END;
"""


# Word-level index beside the trigram one: porter stems ("runs" ~ "running"), which substring
# matching cannot do. Memories only: episodes keep their trigram index (docs/decisions.md).
_V2 = """
CREATE VIRTUAL TABLE memories_words USING fts5(
    content, content='memories', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER memories_words_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_words(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER memories_words_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_words(memories_words, rowid, content) VALUES ('delete', old.id, old.content);
END;
CREATE TRIGGER memories_words_update AFTER UPDATE OF content ON memories BEGIN
    INSERT INTO memories_words(memories_words, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO memories_words(rowid, content) VALUES (new.id, new.content);
END;

INSERT INTO memories_words(memories_words) VALUES ('rebuild');
"""


# Version 4: supersede with history (issue 22 point 2, docs/decisions.md "Supersede"). An older
# memory keeps its row and gets the id of the memory that replaced it and when; recall leaves it
# out by default, get_history walks the chain. Deleting the newer row splices the chain: the
# rows it superseded point at its own successor, or become current again when it had none.
_V4 = """
ALTER TABLE memories ADD COLUMN superseded_by INTEGER;
ALTER TABLE memories ADD COLUMN superseded_at TEXT;
CREATE INDEX memories_superseded ON memories(superseded_by) WHERE superseded_by IS NOT NULL;
CREATE TRIGGER memories_supersede_splice AFTER DELETE ON memories BEGIN
    UPDATE memories SET superseded_by = old.superseded_by,
        superseded_at = CASE WHEN old.superseded_by IS NULL THEN NULL ELSE superseded_at END
    WHERE superseded_by = old.id;
END;
"""

# Version 5: associations the agent declares (issue 22; docs/decisions.md#declared-associations). A link
# goes from one memory to another memory (to_id) or to a named entity of the source memory's agent
# (entity as given, entity_key its casefolded form for matching). The unique indexes start with the
# source, so they also read links by source; two more read them by target. A deleted memory takes its
# links with it, both directions, whoever deletes it (delete_memory, delete_agent_data, a merge move).
_V5 = """
CREATE TABLE memory_links (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    from_id INTEGER NOT NULL,
    relation TEXT NOT NULL,
    to_id INTEGER,
    entity TEXT,
    entity_key TEXT,
    created_at TEXT NOT NULL,
    CHECK ((to_id IS NULL) <> (entity_key IS NULL))
);
CREATE UNIQUE INDEX memory_links_out_memory ON memory_links(from_id, relation, to_id) WHERE to_id IS NOT NULL;
CREATE UNIQUE INDEX memory_links_out_entity ON memory_links(from_id, relation, entity_key)
    WHERE entity_key IS NOT NULL;
CREATE INDEX memory_links_in_memory ON memory_links(to_id) WHERE to_id IS NOT NULL;
CREATE INDEX memory_links_in_entity ON memory_links(entity_key) WHERE entity_key IS NOT NULL;
CREATE TRIGGER memory_links_follow_delete AFTER DELETE ON memories BEGIN
    DELETE FROM memory_links WHERE from_id = old.id;
    DELETE FROM memory_links WHERE to_id = old.id;
END;
"""

# Bulk imports index a batch set-based (bulk_fts.py). They used to drop and re-create the two insert
# triggers inside the batch's transaction; another connection writing at the same moment could then
# fail with "no such table: memories" (SQLite re-reading a schema that changed under FTS5's external
# content tables). Instead the triggers now stand aside while this table holds a row, which only an
# importer's own write transaction ever inserts and deletes again: no schema change at import time.
_V6 = """
CREATE TABLE fts_deferred (held INTEGER PRIMARY KEY);

DROP TRIGGER memories_fts_insert;
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories
WHEN NOT EXISTS (SELECT 1 FROM fts_deferred) BEGIN
    INSERT INTO memories_fts(rowid, content) VALUES (new.id, new.content);
END;
DROP TRIGGER memories_words_insert;
CREATE TRIGGER memories_words_insert AFTER INSERT ON memories
WHEN NOT EXISTS (SELECT 1 FROM fts_deferred) BEGIN
    INSERT INTO memories_words(rowid, content) VALUES (new.id, new.content);
END;
"""

# Version 9 (issue 39; 7 and 8 are another change's): a retired memory leaves recall without a successor
# and stays for get_history (docs/secrets-and-forgetting.md#retire); an expired one leaves recall and is
# deleted after a grace period (#expiry). Each partial index holds only those rows, which recall's
# hidden set reads.
_V9 = """
ALTER TABLE memories ADD COLUMN retired_at TEXT;
ALTER TABLE memories ADD COLUMN retire_reason TEXT;
CREATE INDEX memories_retired ON memories(id) WHERE retired_at IS NOT NULL;
ALTER TABLE memories ADD COLUMN expires_at TEXT;
CREATE INDEX memories_expiring ON memories(expires_at) WHERE expires_at IS NOT NULL;
"""


# Version 7 (issue 36): timestamps before year 1000 used to be written with fewer than four year
# digits ("385-07-25T…", strftime's %Y on glibc), which sort after "2000-…" and fall out of every
# period scan. format_ts pads them now; this pads the rows already written. Only the columns a
# caller or an import can set are affected (the others are always "now").
PADDED_TIMESTAMP_COLUMNS = (
    ("memories", "timestamp"),
    ("memories", "created_at"),
    ("episodes", "start_time"),
    ("episodes", "end_time"),
    ("episodes", "created_at"),
)


def _pad_years(conn: sqlite3.Connection) -> None:
    for table, column in PADDED_TIMESTAMP_COLUMNS:
        conn.execute(
            f"UPDATE {table} SET {column} = substr('0000', 1, 5 - instr({column}, '-')) || {column} "
            f"WHERE instr({column}, '-') BETWEEN 2 AND 4"
        )


# Version 8: block vectors of long memories (issue 32; docs/retrieval.md#long-records). The model reads only
# the first ``max_tokens`` tokens of a text, so a memory longer than that also gets one vector per
# overlapping block of its text beyond the first window (``embed/runtime/blocks.py``); the vector channel scores
# the memory by its best vector. A block copies its memory's scope columns so the in-memory vector index
# (``vector_index.py``, table ``memory_blocks``) filters it like a row; triggers keep the copy in step,
# drop a memory's blocks when its text changes (they are rebuilt with its vector) or the memory goes,
# and log every block change in ``vector_changes`` so an index patches just those blocks.
_V8 = """
CREATE TABLE memory_blocks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id INTEGER NOT NULL,
    block_index INTEGER NOT NULL,
    char_start INTEGER NOT NULL,
    char_end INTEGER NOT NULL,
    agent_id TEXT NOT NULL,
    project_id TEXT NOT NULL DEFAULT '',
    channel TEXT NOT NULL DEFAULT '',
    embedding BLOB NOT NULL,
    embedding_model TEXT NOT NULL,
    embedding_dim INTEGER NOT NULL
);
CREATE UNIQUE INDEX memory_blocks_of_memory ON memory_blocks(memory_id, block_index);
INSERT INTO index_state(name, generation) VALUES ('memory_blocks', 0);

CREATE TRIGGER memory_blocks_follow_delete AFTER DELETE ON memories BEGIN
    DELETE FROM memory_blocks WHERE memory_id = old.id;
END;
CREATE TRIGGER memory_blocks_follow_content AFTER UPDATE OF content ON memories
WHEN old.content IS NOT new.content BEGIN
    DELETE FROM memory_blocks WHERE memory_id = new.id;
END;
CREATE TRIGGER memory_blocks_follow_scope AFTER UPDATE OF agent_id, project_id, channel ON memories
WHEN old.agent_id IS NOT new.agent_id OR old.project_id IS NOT new.project_id OR old.channel IS NOT new.channel
BEGIN
    UPDATE memory_blocks SET agent_id = new.agent_id, project_id = new.project_id, channel = new.channel
    WHERE memory_id = new.id;
END;
CREATE TRIGGER memory_blocks_vector_changed
AFTER UPDATE OF embedding, embedding_model, embedding_dim, agent_id, project_id, channel ON memory_blocks
BEGIN
    INSERT INTO vector_changes(tbl, row_id) VALUES ('memory_blocks', new.id);
END;
CREATE TRIGGER memory_blocks_deleted AFTER DELETE ON memory_blocks BEGIN
    INSERT INTO vector_changes(tbl, row_id) VALUES ('memory_blocks', old.id);
END;
"""


@dataclass(frozen=True)
class Migration:
    """One schema step. ``apply`` runs inside the migration's transaction."""

    version: int
    description: str
    apply: Callable[[sqlite3.Connection], None]


def _script(sql: str) -> Callable[[sqlite3.Connection], None]:
    def run(conn: sqlite3.Connection) -> None:
        # executescript would COMMIT the open transaction; run statement by statement instead.
        for statement in _split_statements(sql):
            conn.execute(statement)

    return run


def _split_statements(sql: str) -> list[str]:
    statements: list[str] = []
    buffer = ""
    for line in sql.splitlines(keepends=True):
        if line.strip().startswith("--"):
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "memories, episodes, profiles, task queue, trigram FTS with triggers", _script(_V1)),
    Migration(2, "word-level FTS over memories (porter unicode61), back-filled", _script(_V2)),
    Migration(3, "vector change log: incremental vector index updates", _script(_V3)),
    Migration(
        4, "supersede links: superseded_by / superseded_at, spliced when the newer row goes", _script(_V4)
    ),
    Migration(5, "declared associations: memory_links, read by source and by target", _script(_V5)),
    Migration(6, "bulk imports defer the insert triggers by a row, not by dropping them", _script(_V6)),
    Migration(7, "timestamps before year 1000 padded to a four-digit year", _pad_years),
    Migration(8, "block vectors of long memories, kept in step with their memory", _script(_V8)),
    Migration(
        9,
        "retire and expiry: retired_at / retire_reason / expires_at, partial indexes of those rows",
        _script(_V9),
    ),
)

# The DDL of every migration, oldest first: health checks take the newest definition of each index/trigger.
SCHEMA_SCRIPTS: tuple[str, ...] = (_V1, _V2, _V3, _V4, _V5, _V6, _V8, _V9)

LATEST_VERSION = MIGRATIONS[-1].version


def current_version(conn: sqlite3.Connection) -> int:
    """The schema version recorded in the file (0 for a new file)."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
    ).fetchone()
    if not exists:
        return 0
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0] or 0)


def applied_versions(conn: sqlite3.Connection) -> set[int]:
    """Every version recorded in the file (empty for a new file)."""
    if current_version(conn) == 0:
        return set()
    return {int(row[0]) for row in conn.execute("SELECT version FROM schema_version")}


def migrate(db: Database, migrations: tuple[Migration, ...] = MIGRATIONS) -> list[int]:
    """Bring the file up to the newest schema; returns the versions applied now.

    A migration runs when its version is not recorded yet, not merely when it is above the newest
    recorded one: numbers may have gaps (branches built apart take numbers ahead of each other), and
    a file that got a later number first still gets an earlier one when it arrives.
    """
    latest = migrations[-1].version if migrations else 0
    with db.write() as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            "version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
    found = current_version(db.connection())
    if found > latest:
        raise SchemaTooNew(
            f"{db.path} has schema version {found}, but this CPersona knows up to {latest}. "
            "Upgrade CPersona (pip install -U cpersona-embedded); the file was left untouched."
        )
    applied: list[int] = []
    for migration in migrations:
        with db.write() as conn:
            # Re-read inside the write lock: another process may have migrated meanwhile.
            if migration.version in applied_versions(conn):
                continue
            migration.apply(conn)
            conn.execute(
                "INSERT INTO schema_version(version, description, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.description, format_ts(utc_now())),
            )
            applied.append(migration.version)
    return applied
