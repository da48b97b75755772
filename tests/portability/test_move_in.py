"""Moving in from the original CPersona, on files the original itself wrote (scripts/make_original_fixtures.py:
cpersona 2.5.12 and 2.6.14 from PyPI), and refusing files that are neither ours nor its."""

from __future__ import annotations

import gzip
import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cpersona.config import Settings
from cpersona.core.text import normalise_timestamp
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.errors import NotOurDatabase, OriginalDatabase
from cpersona.memory import Memory
from cpersona.storage import open_store

FIXTURES = Path(__file__).parent / "fixtures"
MINILM_LABEL = "all-MiniLM-L6-v2"


def settings_at(db: Path, **extra: Any) -> Settings:
    return Settings(
        db_path=db,
        models_dir=db.parent / "models",
        embedding_mode=extra.pop("embedding_mode", "none"),
        update_check=False,
        auto_fetch_model=False,
        operating_context_path=db.parent / "operating-context.toml",
        **extra,
    )


def unpack(name: str, folder: Path) -> Path:
    """A fresh copy of a gzipped fixture database written by the original."""
    target = folder / "memory.db"
    target.write_bytes(gzip.decompress((FIXTURES / f"{name}.db.gz").read_bytes()))
    return target


def rows(db: Path, sql: str) -> list[sqlite3.Row]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def open_memory(db: Path, **extra: Any) -> Memory:
    return Memory(settings_at(db, **extra), backend=NoEmbeddings(), start_background=False)


# -- files that are neither ours nor the original's --------------------------------------------------


def _foreign(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users(name) VALUES ('ada');"
        "CREATE TABLE schema_version (version INTEGER);"  # a version table alone does not make it ours
    )
    conn.close()


def _damaged(path: Path) -> None:
    _foreign(path)
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # the schema page overwritten: SQLite cannot read the file
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (_foreign, "is not a CPersona database (it holds the tables schema_version, users)"),
        (_damaged, "is not a readable SQLite database"),
        (lambda p: p.write_bytes(b"not a database at all\n" * 10), "is not a readable SQLite database"),
    ],
    ids=["another-application", "damaged", "not-sqlite"],
)
def test_a_file_that_is_not_ours_is_refused_in_one_line_and_left_untouched(
    tmp_path: Path, make: Any, says: str
) -> None:
    db = tmp_path / "memory.db"
    make(db)
    before = db.read_bytes()
    with pytest.raises(NotOurDatabase) as refused:
        open_memory(db)
    message = str(refused.value)
    assert says in message and "\n" not in message
    assert "CPERSONA_DB_PATH" in message  # names the fix
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.db"]  # no -wal, -shm, backup or report
    with pytest.raises(NotOurDatabase):  # the report-only view refuses it too
        open_store(db, read_only=True)


def test_an_original_of_a_version_we_do_not_read_is_refused_untouched(tmp_path: Path) -> None:
    db = unpack("original-2.5.12", tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE schema_version SET version = 9")  # an original from before 2.5
    conn.commit()
    conn.close()
    before = db.read_bytes()
    with pytest.raises(NotOurDatabase, match="schema version 9"):
        open_memory(db)
    assert db.read_bytes() == before


def test_the_storage_layer_alone_does_not_move_an_original_in(tmp_path: Path) -> None:
    db = unpack("original-2.5.12", tmp_path)
    before = db.read_bytes()
    with pytest.raises(OriginalDatabase, match="cpersona serve"):
        open_store(db)
    assert db.read_bytes() == before


# -- moving in ----------------------------------------------------------------------------------------


def _original_rows(db: Path) -> dict[str, list[sqlite3.Row]]:
    return {t: rows(db, f"SELECT * FROM {t} ORDER BY id") for t in ("memories", "episodes", "profiles")}


def _instant(value: str) -> str:
    return normalise_timestamp(value)


def _check_carried(original: dict[str, list[sqlite3.Row]], moved: Path) -> None:
    """Every row of the original is in the moved file, with every field it has a home for."""
    mine = {
        (r["agent_id"], r["project_id"], r["channel"], r["content"]): r
        for r in rows(moved, "SELECT * FROM memories")
    }
    assert len(mine) == len(original["memories"])
    for old in original["memories"]:
        new = mine[
            (old["agent_id"], old["project_id"], old["channel"], old["content"])
        ]  # content byte-identical
        assert new["msg_id"] == old["msg_id"]
        assert json.loads(new["source"] or "{}") == json.loads(old["source"] or "{}")
        assert json.loads(new["metadata"] or "{}") == json.loads(old["metadata"] or "{}")
        assert new["timestamp"] == _instant(old["timestamp"])
        assert new["created_at"] == _instant(old["created_at"])
        assert (new["locked"], new["recall_count"]) == (old["locked"], old["recall_count"])
        assert new["last_recalled_at"] == (old["last_recalled_at"] and _instant(old["last_recalled_at"]))
    by_agent = Counter(r["agent_id"] for r in rows(moved, "SELECT agent_id FROM memories"))
    assert by_agent == Counter(r["agent_id"] for r in original["memories"])
    episodes = {(r["agent_id"], r["summary"]): r for r in rows(moved, "SELECT * FROM episodes")}
    assert len(episodes) == len(original["episodes"])
    for old in original["episodes"]:
        new = episodes[(old["agent_id"], old["summary"])]
        assert (new["project_id"], new["channel"], new["resolved"]) == (
            old["project_id"],
            old["channel"],
            old["resolved"],
        )
        assert (
            new["keywords"].split("\n") == [k for k in old["keywords"].split(",") if k] or not old["keywords"]
        )
        assert new["start_time"] == (old["start_time"] and _instant(old["start_time"]))
        assert new["end_time"] == (old["end_time"] and _instant(old["end_time"]))
    profiles = {(r["agent_id"], r["user_id"]): r["content"] for r in rows(moved, "SELECT * FROM profiles")}
    assert profiles == {(r["agent_id"], r["user_id"]): r["content"] for r in original["profiles"]}


@pytest.mark.parametrize("version", ["2.5.12", "2.6.14"])
def test_starting_on_an_original_database_moves_it_in_with_nothing_lost(
    tmp_path: Path, version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "EMBEDDING_MODEL", MINILM_LABEL
    )  # the host entry the original ran under names its model
    db = unpack(f"original-{version}", tmp_path)
    original = _original_rows(db)
    assert {len(v) for v in original.values()} >= {2} and any(r["locked"] for r in original["memories"])
    with open_memory(db) as memory:
        report = memory.moved_in
        assert report is not None
        stats = memory.stats()
        assert stats["counts"] == {"memories": 24, "episodes": 3, "profiles": 2}
        listed = memory.list_memories(agent_id="alice", limit=50)
        assert listed["total"] == 8
    _check_carried(original, db)
    # The vectors of all-MiniLM-L6-v2 are kept as that model's, byte for byte.
    kept = {
        r["content"]: r
        for r in rows(db, "SELECT content, embedding, embedding_model, embedding_dim FROM memories")
    }
    for old in original["memories"]:
        assert kept[old["content"]]["embedding"] == old["embedding"]
        assert (kept[old["content"]]["embedding_model"], kept[old["content"]]["embedding_dim"]) == (
            "all-minilm-l6-v2",
            384,
        )
    # A consistent copy of the original sits beside it, still the original's own file.
    backup = Path(report["backup"])
    assert backup.parent == tmp_path and backup.name.startswith(
        f"memory.original-v{13 if version < '2.6' else 21}-"
    )
    assert _original_rows(backup) == original
    saved = json.loads(Path(report["report"]).read_text(encoding="utf-8"))
    assert saved["imported"]["memories"] == {"inserted": 24, "duplicates": 0}
    assert saved["vectors_not_kept"] == {} and saved["error_count"] == 0
    if version.startswith("2.6"):
        # Its declarations from a memory (to a memory, to an entity, an entity's mention) are links here;
        # what has no home (the entity's alias) is named and counted, never dropped silently.
        assert saved["not_carried"] == {"entity_aliases": 1}
        assert saved["imported"]["links"] == {"inserted": 2, "duplicates": 1, "dropped": 0}
        # Its correction (memory 10 supersedes memory 7) is this edition's supersede link.
        assert saved["imported"]["supersede_links"] == {"read": 1, "linked": 1, "skipped": 0}
        older, newer = (original["memories"][i]["content"] for i in (6, 9))
        by_content = {r["content"]: r for r in rows(db, "SELECT id, content, superseded_by FROM memories")}
        assert by_content[older]["superseded_by"] == by_content[newer]["id"]
        links = rows(db, "SELECT from_id, relation, to_id, entity FROM memory_links ORDER BY id")
        first, fourth = (
            rows(db, f"SELECT id FROM memories WHERE content = '{original['memories'][i]['content']}'")[0][0]
            for i in (0, 3)
        )
        assert [tuple(r) for r in links] == [
            (first, "related_to", fourth, None),
            (first, "mentions", None, "Alice"),
        ]
    else:
        assert saved["not_carried"] == {}
    # The second start finds our own file: nothing is moved again.
    with open_memory(db) as memory:
        assert memory.moved_in is None
        assert memory.stats()["counts"]["memories"] == 24


def test_the_2_6_vectors_carry_their_own_label(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EMBEDDING_MODEL", raising=False)
    monkeypatch.delenv("CPERSONA_EMBEDDING_MODEL", raising=False)
    db = unpack("original-2.6.14", tmp_path)
    with open_memory(db) as memory:
        assert memory.moved_in is not None and memory.moved_in["vectors_not_kept"] == {}
    assert rows(db, "SELECT COUNT(*) FROM memories WHERE embedding_model = 'all-minilm-l6-v2'")[0][0] == 24


def test_vectors_of_an_unlabelled_or_unknown_model_are_queued_and_said_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EMBEDDING_MODEL", "acme-embed-8")
    db = unpack("original-2.5.12-unknown-model", tmp_path)
    with open_memory(db, embedding_mode="onnx") as memory:
        report = memory.moved_in
        assert report is not None
        assert report["vectors_not_kept"] == {"acme-embed-8 (8-d)": 27}  # 24 memories + 3 episodes
        assert report["queued_for_embedding"] == 27
        assert memory.get_queue_status()["depth"] == 27
    assert rows(db, "SELECT COUNT(*) FROM memories WHERE embedding IS NOT NULL")[0][0] == 0


def test_the_original_calibration_sidecar_moves_beside_the_backup(tmp_path: Path) -> None:
    db = unpack("original-2.5.12", tmp_path)
    sidecar = {
        "embedding_dim": 384,
        "embedding_model": MINILM_LABEL,
        "scoring_version": "x",
        "global_threshold": 0.4,
    }
    Path(f"{db}.calibration.json").write_text(json.dumps(sidecar), encoding="utf-8")
    with open_memory(db) as memory:
        report = memory.moved_in
        assert report is not None and "calibrates again" in report["calibration"]
        assert report["vector_model_label"] == MINILM_LABEL  # the sidecar named the model of its vectors
    assert not Path(f"{db}.calibration.json").exists()
    assert json.loads(Path(f"{report['backup']}.calibration.json").read_text(encoding="utf-8")) == sidecar


def test_a_live_wal_of_the_original_is_carried(tmp_path: Path) -> None:
    db = unpack("original-2.5.12", tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute(
        "INSERT INTO memories(agent_id, content, timestamp) VALUES ('dave', 'only in the WAL', '2024-06-01T00:00:00Z')"
    )
    conn.commit()
    assert Path(f"{db}-wal").stat().st_size > 0
    with open_memory(db) as memory:  # the writer's connection is still open, its commit only in the WAL
        assert memory.stats()["counts"]["memories"] == 25
    conn.close()
    assert rows(db, "SELECT content FROM memories WHERE agent_id = 'dave'")[0][0] == "only in the WAL"


def test_a_write_by_the_original_during_the_move_stops_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cpersona.errors import DatabaseUnavailable
    from cpersona.portability import move_in

    db = unpack("original-2.5.12", tmp_path)
    real = move_in.import_original_database

    def while_its_server_writes(*args: Any, **kwargs: Any) -> Any:
        done = real(*args, **kwargs)
        conn = sqlite3.connect(db)  # the original server, still running, stores one more memory
        conn.execute(
            "INSERT INTO memories(agent_id, content, timestamp) VALUES ('alice', 'late', '2024-01-01')"
        )
        conn.commit()
        conn.close()
        return done

    monkeypatch.setattr(move_in, "import_original_database", while_its_server_writes)
    with pytest.raises(DatabaseUnavailable, match="written to while it was being moved in"):
        open_memory(db)
    assert rows(db, "SELECT COUNT(*) FROM memories")[0][0] == 25  # still the original's file, its write kept
    assert not list(tmp_path.glob("*.moving-in*"))


def test_our_file_with_a_wal_but_no_shm_still_opens(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with open_memory(db) as memory:
        memory.store("alice", "kept across a lost -shm file")
    conn = sqlite3.connect(db)  # leave a WAL with a commit in it, then lose the shared-memory file
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("UPDATE memories SET recall_count = 7")
    conn.commit()
    wal = db.with_name("memory.db-wal").read_bytes()
    conn.close()
    db.with_name("memory.db-wal").write_bytes(wal)
    db.with_name("memory.db-shm").unlink(missing_ok=True)
    with open_memory(db) as memory:
        assert memory.moved_in is None
        assert memory.list_memories(agent_id="alice")["items"][0]["content"] == "kept across a lost -shm file"
