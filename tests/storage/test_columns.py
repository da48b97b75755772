"""Rows read by position (SQLite's hydration) give exactly the dicts rows read by name give."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from cpersona.storage.columns import EPISODE_SHAPE, MEMORY_SHAPE, TableShape
from cpersona.storage.sqlite.store import SqliteStore
from cpersona.storage.values import NewEpisode, NewMemory
from cpersona.storage.vectors import to_blob

NOW = "2026-01-01T00:00:00.000000Z"


def _fill(store: SqliteStore) -> None:
    with store.write() as s:
        s.memories.insert(NewMemory("a", "", "", "", "plain", None, None, NOW, NOW))
        s.memories.insert(
            NewMemory(
                "a",
                "p",
                "c",
                "msg-1",
                "with json",
                '{"id": "src/1", "kind": "chat"}',
                '{"tags": ["x", "y"], "n": 2}',
                "2025-05-05T10:00:00.000000Z",
                NOW,
                to_blob(np.array([1.0, 0.0, 0.0], dtype=np.float32)),
                "m",
                3,
            )
        )
        locked = s.memories.insert(NewMemory("b", "", "", "", "locked one", "", "", NOW, NOW))
        s.memories.set_locked(locked, True)
        s.memories.mark_recalled([locked], NOW)
        s.episodes.insert(NewEpisode("a", "", "", "summary", "k1\nk2\n", None, None, False, NOW))
        s.episodes.insert(
            NewEpisode(
                "a",
                "p",
                "c",
                "resolved",
                "",
                NOW,
                NOW,
                True,
                NOW,
                to_blob(np.array([0.0, 1.0, 0.0], dtype=np.float32)),
                "m",
                3,
            )
        )


def _both(conn: sqlite3.Connection, shape: TableShape) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    named = conn.cursor()
    named.row_factory = sqlite3.Row
    plain = conn.cursor()
    plain.row_factory = None
    sql = f"SELECT {shape.columns} FROM {shape.table} ORDER BY id"
    by_name = [shape.to_dict(r) for r in named.execute(sql)]
    by_position = [shape.values_dict(r) for r in plain.execute(sql)]
    return list(zip(by_name, by_position, strict=True))


def test_values_dicts_equal_the_named_dicts_key_for_key(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "m.db")
    _fill(store)
    conn = store.db.connection()
    pairs = _both(conn, MEMORY_SHAPE) + _both(conn, EPISODE_SHAPE)
    assert len(pairs) == 5
    for named, positional in pairs:
        assert list(named.items()) == list(positional.items())
    kinds = {(p["type"], bool(p.get("source")), bool(p.get("locked"))) for _, p in pairs}
    assert ("memory", True, False) in kinds and ("memory", False, True) in kinds
    store.close()


def test_get_many_is_the_named_read(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "m.db")
    _fill(store)
    with store.read() as s:
        for rows in (s.memories, s.episodes):
            got = rows.get_many([1, 2, 3], None)
            assert got and all(list(got[i].items()) == list((rows.get(i) or {}).items()) for i in got)
    store.close()
