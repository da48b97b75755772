"""Export / import / merge / channel-axis repair through the Python API on real SQLite files (merge and
channel-axis repair on PostgreSQL too)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pg_cluster import BOTH_ENGINES, PG_VECTOR_INDEX, raw_rows

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.memory import Memory
from cpersona.portability.channel_axis import channel_from_session_id
from cpersona.portability.importer import MAX_LISTED_ERRORS, InvalidExportFile
from cpersona.portability.paths import PathRefused
from cpersona.storage.scope import Scope
from cpersona.storage.sqlite.memories import SqliteMemories
from cpersona.storage.vectors import to_blob

MEMORY_COLUMNS = (
    "agent_id, project_id, channel, msg_id, content, source, metadata, timestamp, created_at, embedding, "
    "embedding_model, embedding_dim, recall_count, last_recalled_at, locked"
)
EPISODE_COLUMNS = (
    "agent_id, project_id, channel, summary, keywords, start_time, end_time, resolved, created_at, embedding, "
    "embedding_model, embedding_dim"
)


def settings_for(tmp: Path, name: str, **extra: Any) -> Settings:
    return Settings(
        db_path=tmp / name / "memory.db",
        models_dir=tmp / "models",
        embedding_mode="none",
        update_check=False,
        auto_fetch_model=False,
        export_dir=tmp / "exports",
        **extra,
    )


def open_memory(tmp: Path, name: str, **extra: Any) -> Memory:
    mem = Memory(settings_for(tmp, name, **extra), backend=NoEmbeddings())
    mem.wait_until_ready(5)
    return mem


def rows(db: Path, agent: str | None = None, *, vectors: bool = True) -> dict[str, list[tuple[Any, ...]]]:
    """Every row minus its id, sorted, so two databases can be compared."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    where, params = ("WHERE agent_id = ?", [agent]) if agent is not None else ("", [])
    mem_cols = (
        MEMORY_COLUMNS
        if vectors
        else MEMORY_COLUMNS.replace("embedding, embedding_model, embedding_dim, ", "")
    )
    ep_cols = (
        EPISODE_COLUMNS
        if vectors
        else EPISODE_COLUMNS.replace(", embedding, embedding_model, embedding_dim", "")
    )
    try:
        return {
            "memories": sorted(
                conn.execute(f"SELECT {mem_cols} FROM memories {where}", params).fetchall(), key=repr
            ),
            "episodes": sorted(
                conn.execute(f"SELECT {ep_cols} FROM episodes {where}", params).fetchall(), key=repr
            ),
            "profiles": sorted(conn.execute(f"SELECT * FROM profiles {where}", params).fetchall(), key=repr),
        }
    finally:
        conn.close()


def rows_in(mem: Memory, agent: str | None = None) -> dict[str, list[tuple[Any, ...]]]:
    """``rows`` through the memory's own engine (SQLite or PostgreSQL), vectors included."""
    where, params = ("WHERE agent_id = ?", (agent,)) if agent is not None else ("", ())
    return {
        "memories": sorted(raw_rows(mem, f"SELECT {MEMORY_COLUMNS} FROM memories {where}", params), key=repr),
        "episodes": sorted(
            raw_rows(mem, f"SELECT {EPISODE_COLUMNS} FROM episodes {where}", params), key=repr
        ),
        "profiles": sorted(raw_rows(mem, f"SELECT * FROM profiles {where}", params), key=repr),
    }


def populate(mem: Memory, agent: str, *, vectors: bool = False) -> None:
    """A varied corpus: axes, msg ids, source/metadata, timestamps, locks, recall counts, episodes, profiles."""
    ids = []
    for i in range(12):
        out = mem.store(
            agent,
            f"{agent} memory number {i} about topic {i % 3} — ünïcødé 日本語",
            msg_id=f"m{i}" if i % 2 else None,
            source={"type": "user", "id": f"U{i}", "name": "Ana"} if i % 3 == 0 else None,
            metadata={"tags": ["x", i], "nested": {"k": i}} if i % 4 == 0 else None,
            timestamp=f"2025-0{1 + i % 9}-1{i % 10}T08:30:00+02:00",
            channel=["", "general", "dev"][i % 3],
            project_id=["", "proj"][i % 2],
        )
        assert out["result"] == "stored", out
        ids.append(out["id"])
    mem.lock_memory(ids[1])
    mem.lock_memory(ids[5])
    mem.recall(agent, "topic 1")
    mem.recall(agent, "topic 1")
    mem.archive_episode(
        agent,
        f"{agent} first session summary",
        keywords=["alpha", "beta"],
        resolved=True,
        history=[
            {"role": "user", "content": "hi", "timestamp": "2025-03-01T10:00:00Z"},
            {"role": "assistant", "content": "yo", "timestamp": "2025-03-01T11:00:00Z"},
        ],
    )
    mem.archive_episode(agent, f"{agent} second session summary", channel="dev", project_id="proj")
    mem.update_profile(agent, f"{agent} likes tea")
    mem.update_profile(agent, f"{agent} in proj for bob", project_id="proj", user_id="bob")
    if vectors:
        rng = np.random.default_rng(7)
        with mem.storage.write() as s:
            for table, repo in (("memories", s.memories), ("episodes", s.episodes)):
                for (rid,) in raw_rows(
                    mem, f"SELECT id FROM {table} WHERE agent_id = ? ORDER BY id", (agent,)
                ):
                    v = rng.standard_normal(8).astype(np.float32)
                    repo.set_embedding(rid, to_blob(v / np.linalg.norm(v)), "test-model", 8)


@pytest.mark.parametrize("include_embeddings", [False, True])
def test_round_trip_into_an_empty_database(tmp_path: Path, include_embeddings: bool) -> None:
    with open_memory(tmp_path, "src") as src:
        populate(src, "ana", vectors=True)
        populate(src, "bob")
        out = src.export_memories("ana", "ana.jsonl", include_embeddings)
    assert out["counts"] == {"memories": 12, "episodes": 2, "profiles": 2}
    with open_memory(tmp_path, "dst") as dst:
        first = dst.import_memories("ana.jsonl")
        assert first["counts"]["memories"] == {"inserted": 12, "duplicates": 0}
        assert first["counts"]["episodes"] == {"inserted": 2, "duplicates": 0}
        assert first["counts"]["profiles"] == {"inserted": 2, "updated": 0, "kept": 0}
        assert first["error_count"] == 0 and first["truncated"] == 0
        before = rows(dst.storage.db.path)
        second = dst.import_memories("ana.jsonl")
        assert second["counts"]["memories"] == {"inserted": 0, "duplicates": 12}
        assert second["counts"]["episodes"] == {"inserted": 0, "duplicates": 2}
        assert second["counts"]["profiles"] == {"inserted": 0, "updated": 0, "kept": 2}
        assert rows(dst.storage.db.path) == before
    source = rows(tmp_path / "src" / "memory.db", "ana", vectors=include_embeddings)
    copied = rows(tmp_path / "dst" / "memory.db", vectors=include_embeddings)
    assert copied == source
    locked = [r for r in copied["memories"] if r[-1] == 1]
    assert len(locked) == 2 and any(r[-3] == 2 for r in copied["memories"])  # locks and recall counts kept
    if not include_embeddings:
        conn = sqlite3.connect(tmp_path / "dst" / "memory.db")
        assert conn.execute("SELECT COUNT(*) FROM memories WHERE embedding IS NOT NULL").fetchone()[0] == 0


def test_export_of_one_agent_never_contains_another(tmp_path: Path) -> None:
    with open_memory(tmp_path, "src") as src:
        populate(src, "ana")
        populate(src, "zed")
        src.export_memories("ana", "ana.jsonl")
        everything = src.export_memories(None, "all.jsonl", confined=True)
    lines = [json.loads(x) for x in (tmp_path / "exports" / "ana.jsonl").read_text().splitlines()]
    assert lines[0]["type"] == "header" and lines[0]["agent_id"] == "ana"
    assert {r["agent_id"] for r in lines[1:]} == {"ana"}
    assert all("zed" not in json.dumps(r) for r in lines)
    assert everything["counts"] == {"memories": 24, "episodes": 4, "profiles": 4}


def test_target_agent_and_fts_of_imported_rows(tmp_path: Path) -> None:
    with open_memory(tmp_path, "src") as src:
        populate(src, "ana")
        src.export_memories("ana", "ana.jsonl")
        result = src.import_memories("ana.jsonl", target_agent_id="carol")
        assert result["counts"]["memories"]["inserted"] == 12
        found = src.recall("carol", "number 7 about", limit=50)
        assert any(r["content"].startswith("ana memory number 7 ") for r in found["results"])  # FTS has it
        assert all(r["agent_id"] == "carol" for r in found["results"] if r.get("type") == "memory")
        assert src.get_profile("carol", project_id="proj", user_id="bob")["profile"] == "ana in proj for bob"


def test_profile_import_keeps_the_newer_text(tmp_path: Path) -> None:
    with open_memory(tmp_path, "src") as src:
        src.update_profile("ana", "old text")
        src.export_memories("ana", "p.jsonl")
        src.update_profile("ana", "newer text")
        result = src.import_memories("p.jsonl")
        assert result["counts"]["profiles"] == {"inserted": 0, "updated": 0, "kept": 1}
        assert src.get_profile("ana")["profile"] == "newer text"


def write_lines(path: Path, lines: list[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write((line if isinstance(line, str) else json.dumps(line)) + "\n")


HEADER = {"type": "header", "format": "cpersona-export", "version": 1}


def good(content: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "memory",
        "agent_id": "ana",
        "content": content,
        "created_at": "2025-01-01T00:00:00Z",
        **extra,
    }


def test_bad_lines_are_reported_by_number_and_good_lines_imported(tmp_path: Path) -> None:
    write_lines(
        tmp_path / "exports" / "bad.jsonl",
        [
            HEADER,  # 1
            good("first good line"),  # 2
            "this is not json {",  # 3
            {"type": "gadget", "agent_id": "ana", "content": "x"},  # 4
            {"type": "memory", "agent_id": "ana"},  # 5 missing content
            good("x" * 20_000),  # 6 huge: truncated, imported
            good("bad metadata", metadata="{not json"),  # 7
            good("meta too big", metadata={"k": "v" * 9000}),  # 8
            good("bad stamp", timestamp="yesterday"),  # 9
            good("bad vector", embedding="AAAA", embedding_model="m", embedding_dim=8),  # 10
            ["a", "list"],  # 11
            "",  # 12 blank: ignored
            good("last good line", locked=True),  # 13
            good("bad lock", locked="yes"),  # 14
        ],
    )
    with open_memory(tmp_path, "db") as mem:
        dry = mem.import_memories("bad.jsonl", dry_run=True)
        assert rows(mem.storage.db.path)["memories"] == []
        result = mem.import_memories("bad.jsonl")
        stored = mem.list_memories("ana")["items"]
    assert dry["counts"] == result["counts"] and dry["errors"] == result["errors"]
    assert [e["line"] for e in result["errors"]] == [3, 4, 5, 7, 8, 9, 10, 11, 14]
    assert result["error_count"] == 9 and result["truncated"] == 1
    assert "not valid JSON" in result["errors"][0]["error"]
    assert "unknown record type" in result["errors"][1]["error"]
    assert "'content' is missing" in result["errors"][2]["error"]
    assert "metadata is not valid JSON" in result["errors"][3]["error"]
    assert "cap is" in result["errors"][4]["error"]
    assert sorted(len(r["content"]) for r in stored) == sorted([15, 14, 16_000])
    assert {r["content"] for r in stored if r["locked"]} == {"last good line"}
    assert result["counts"]["memories"] == {"inserted": 3, "duplicates": 0}


def test_error_list_is_capped_but_counted(tmp_path: Path) -> None:
    write_lines(tmp_path / "exports" / "many.jsonl", [HEADER] + ["{bad"] * (MAX_LISTED_ERRORS + 15))
    with open_memory(tmp_path, "db") as mem:
        result = mem.import_memories("many.jsonl")
    assert result["error_count"] == MAX_LISTED_ERRORS + 15 and len(result["errors"]) == MAX_LISTED_ERRORS


@pytest.mark.parametrize(
    "first",
    ["", "not json", json.dumps({"type": "memory", "content": "x"}), json.dumps({**HEADER, "version": 99})],
)
def test_a_file_without_a_valid_header_is_refused_whole(tmp_path: Path, first: str) -> None:
    write_lines(tmp_path / "exports" / "h.jsonl", [first, good("would be fine")] if first else [])
    with open_memory(tmp_path, "db") as mem:
        with pytest.raises(InvalidExportFile):
            mem.import_memories("h.jsonl")
        assert rows(mem.storage.db.path)["memories"] == []


def test_dry_run_counts_in_file_repeats_and_writes_nothing(tmp_path: Path) -> None:
    write_lines(
        tmp_path / "exports" / "rep.jsonl",
        [
            HEADER,
            good("same"),
            good("same"),
            good("other", msg_id="7"),
            good("other text", msg_id="7"),
            {"type": "episode", "agent_id": "ana", "summary": "ep"},
            {"type": "episode", "agent_id": "ana", "summary": "ep"},
        ],
    )
    with open_memory(tmp_path, "db") as mem:
        dry = mem.import_memories("rep.jsonl", dry_run=True)
        assert rows(mem.storage.db.path) == {"memories": [], "episodes": [], "profiles": []}
        assert mem.get_queue_status()["depth"] == 0
        real = mem.import_memories("rep.jsonl")
    assert dry["counts"] == real["counts"]
    assert real["counts"]["memories"] == {"inserted": 2, "duplicates": 2}
    assert real["counts"]["episodes"] == {"inserted": 1, "duplicates": 1}


def test_export_refuses_to_overwrite_and_is_atomic(tmp_path: Path) -> None:
    with open_memory(tmp_path, "db") as mem:
        populate(mem, "ana")
        mem.export_memories("ana", "a.jsonl")
        first = (tmp_path / "exports" / "a.jsonl").read_bytes()
        assert (
            tmp_path / "exports" / "a.jsonl"
        ).stat().st_mode & 0o777 == 0o600  # private: docs/decisions.md
        with pytest.raises(Exception, match="already exists"):
            mem.export_memories("ana", "a.jsonl")
        assert (tmp_path / "exports" / "a.jsonl").read_bytes() == first
        mem.store("ana", "one more")
        again = mem.export_memories("ana", "a.jsonl", overwrite=True)
        assert again["counts"]["memories"] == 13
    assert sorted(p.name for p in (tmp_path / "exports").iterdir()) == ["a.jsonl"]  # no temp file left


@pytest.mark.parametrize("bad", ["../escape.jsonl", "sub/../../escape.jsonl", "/tmp/elsewhere.jsonl", ""])
def test_paths_outside_the_export_dir_are_refused(tmp_path: Path, bad: str) -> None:
    with open_memory(tmp_path, "db") as mem:
        with pytest.raises(PathRefused) as info:
            mem.export_memories("ana", bad)
        assert info.value.code == "path_refused"
        with pytest.raises(PathRefused):
            mem.import_memories(bad)
    assert not (tmp_path / "escape.jsonl").exists()


def test_symlink_escaping_the_export_dir_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.jsonl").write_text(json.dumps(HEADER) + "\n")
    with open_memory(tmp_path, "db") as mem:
        (tmp_path / "exports").mkdir()
        os.symlink(outside, tmp_path / "exports" / "link")
        os.symlink(outside / "secret.jsonl", tmp_path / "exports" / "file.jsonl")
        for path in ("link/secret.jsonl", "file.jsonl", str(tmp_path / "exports" / "link" / "new.jsonl")):
            with pytest.raises(PathRefused, match="symlink"):
                mem.import_memories(path) if "new" not in path else mem.export_memories("a", path)
        assert not (outside / "new.jsonl").exists()
        # An absolute path inside the directory is fine.
        ok = mem.export_memories("a", str(tmp_path / "exports" / "inside.jsonl"))
        assert ok["ok"] and Path(ok["path"]).parent == (tmp_path / "exports").resolve()


def test_default_export_dir_is_beside_the_database(tmp_path: Path) -> None:
    settings = Settings(
        db_path=tmp_path / "d" / "memory.db",
        models_dir=tmp_path / "m",
        embedding_mode="none",
        update_check=False,
        auto_fetch_model=False,
    )
    with Memory(settings, backend=NoEmbeddings()) as mem:
        out = mem.export_memories("a", "x.jsonl")
    assert Path(out["path"]) == (tmp_path / "d" / "exports" / "x.jsonl").resolve()


# -- merge ----------------------------------------------------------------------------------


@BOTH_ENGINES
def test_merge_copy_and_move_with_dedup(tmp_path: Path, db_url: str | None) -> None:
    with open_memory(tmp_path, "db", db_url=db_url, pg_vector_index=PG_VECTOR_INDEX) as mem:
        populate(mem, "src")
        mem.store(
            "dst", "src memory number 0 about topic 0 — ünïcødé 日本語"
        )  # same content and scope as one source row
        mem.store("dst", "unrelated", msg_id="m1", project_id="proj")  # same msg_id as another
        mem.archive_episode("dst", "src first session summary")
        dry = mem.merge_memories("src", "dst", dry_run=True)
        assert rows_in(mem, "dst")["memories"].__len__() == 2
        copy = mem.merge_memories("src", "dst")
        assert dry["counts"] == copy["counts"]
        assert copy["counts"]["memories"] == {"copied": 10, "skipped": 2}
        assert copy["counts"]["episodes"] == {"copied": 1, "skipped": 1}
        assert copy["counts"]["profiles"] == {"copied": 2, "skipped": 0}
        assert len(rows_in(mem, "src")["memories"]) == 12
        again = mem.merge_memories("src", "dst")
        assert again["counts"]["memories"] == {"copied": 0, "skipped": 12}
        move = mem.merge_memories("src", "dst", mode="move")
        assert move["counts"]["memories"] == {"moved": 0, "skipped": 12}
        assert rows_in(mem, "src") == {"memories": [], "episodes": [], "profiles": []}
        assert len(rows_in(mem, "dst")["memories"]) == 12
        assert mem.merge_memories("src", "dst", mode="move")["counts"]["memories"] == {
            "moved": 0,
            "skipped": 0,
        }


@BOTH_ENGINES
def test_merge_move_keeps_ids_vectors_and_locks(tmp_path: Path, db_url: str | None) -> None:
    with open_memory(tmp_path, "db", db_url=db_url, pg_vector_index=PG_VECTOR_INDEX) as mem:
        populate(mem, "src", vectors=True)
        before = {r[4]: r for r in rows_in(mem, "src")["memories"]}
        mem.store(
            "dst", "src memory number 5 about topic 2 — ünïcødé 日本語", channel="dev", project_id="proj"
        )
        result = mem.merge_memories("src", "dst", mode="move")
        assert result["counts"]["memories"] == {"moved": 11, "skipped": 1}
        after = {r[4]: r for r in rows_in(mem, "dst")["memories"]}
        dup = after.pop("src memory number 5 about topic 2 — ünïcødé 日本語")
        assert dup[-1] == 1  # the locked source duplicate passed its lock on
        for content, row in after.items():
            assert row[1:] == before[content][1:]


@BOTH_ENGINES
def test_merge_refuses_same_agent_and_bad_mode(tmp_path: Path, db_url: str | None) -> None:
    with open_memory(tmp_path, "db", db_url=db_url, pg_vector_index=PG_VECTOR_INDEX) as mem:
        with pytest.raises(ValueError, match="same agent"):
            mem.merge_memories("a", "a")
        with pytest.raises(ValueError, match="mode"):
            mem.merge_memories("a", "b", mode="swap")
        with pytest.raises(ValueError, match="strategy"):
            mem.merge_memories("a", "b", strategy="overwrite")


# -- channel axis ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "channel"),
    [
        ("discord:general:8812", "general"),
        ("slack:dev", "dev"),
        ("irc:#ops:x:y", "#ops"),
        ("nocolon", None),
        (":general:1", None),
        ("discord::1", None),
        ("discord:has space:1", None),
        (42, None),
        (None, None),
    ],
)
def test_session_id_parsing(value: Any, channel: str | None) -> None:
    assert channel_from_session_id(value) == channel


@BOTH_ENGINES
def test_migrate_channel_axis_dry_run_real_and_idempotent(tmp_path: Path, db_url: str | None) -> None:
    with open_memory(tmp_path, "db", db_url=db_url, pg_vector_index=PG_VECTOR_INDEX) as mem:
        mem.store("ana", "from general", channel="bridge", metadata={"session_id": "discord:general:1"})
        mem.store("ana", "from dev", channel="bridge", source={"type": "user", "id": "slack:dev:42"})
        mem.store("ana", "no session", channel="bridge")
        locked = mem.store(
            "ana", "locked one", channel="bridge", metadata={"session_id": "discord:general:2"}
        )
        mem.lock_memory(locked["id"])
        mem.store("ana", "clash", channel="general")
        mem.store("ana", "clash", channel="bridge", metadata={"session_id": "discord:general:3"})
        mem.store("ana", "loops back", channel="relay", metadata={"session_id": "x:bridge:1"})
        mem.archive_episode("ana", "bridge episode", channel="bridge")
        mem.store("bob", "other agent", channel="bridge", metadata={"session_id": "discord:general:9"})
        before = rows_in(mem)
        dry = mem.migrate_channel_axis("ana")
        assert rows_in(mem) == before
        assert dry["dry_run"] is True
        assert (dry["scanned"], dry["moved"], dry["unrecoverable"], dry["collisions"], dry["locked"]) == (
            7,
            2,
            3,
            1,
            1,
        )
        assert dry["targets"] == {"general": 1, "dev": 1}
        real = mem.migrate_channel_axis("ana", dry_run=False)
        assert {k: real[k] for k in ("moved", "unrecoverable", "collisions", "locked")} == {
            k: dry[k] for k in ("moved", "unrecoverable", "collisions", "locked")
        }
        channels = {r["content"]: r["channel"] for r in mem.list_memories("ana")["items"]}
        assert channels["from general"] == "general" and channels["from dev"] == "dev"
        assert channels["no session"] == "bridge" and channels["locked one"] == "bridge"
        assert mem.list_memories("bob")["items"][0]["channel"] == "bridge"  # other agent untouched
        after = rows_in(mem)
        second = mem.migrate_channel_axis("ana", dry_run=False)
        assert second["moved"] == 0 and rows_in(mem) == after
        glob = mem.migrate_channel_axis("ana", dry_run=False, globalize_unrecoverable=True)
        assert glob["globalized"] == 3 and glob["locked"] == 1
        assert {r["content"]: r["channel"] for r in mem.list_memories("ana")["items"]}["no session"] == ""
        assert mem.list_episodes("ana")["items"][0]["channel"] == ""
        final = rows_in(mem)
        assert mem.migrate_channel_axis("ana", dry_run=False, globalize_unrecoverable=True)["globalized"] == 0
        assert rows_in(mem) == final


@BOTH_ENGINES
def test_migrate_channel_axis_custom_bridges(tmp_path: Path, db_url: str | None) -> None:
    with open_memory(tmp_path, "db", db_url=db_url, pg_vector_index=PG_VECTOR_INDEX) as mem:
        mem.store("ana", "via hub", channel="hub", metadata={"session_id": "tg:news:1"})
        assert mem.migrate_channel_axis(dry_run=False)["scanned"] == 0
        result = mem.migrate_channel_axis(dry_run=False, bridge_channels=["hub"])
        assert result["moved"] == 1 and result["targets"] == {"news": 1}
        with pytest.raises(ValueError):
            mem.migrate_channel_axis(bridge_channels=[""])


def test_imported_rows_without_vectors_are_queued_when_a_model_is_configured(tmp_path: Path) -> None:
    with open_memory(tmp_path, "src") as src:
        populate(src, "ana")
        src.export_memories("ana", "ana.jsonl")
    settings = settings_for(tmp_path, "dst").with_overrides(
        embedding_mode="onnx", embedding_model="all-minilm-l6-v2"
    )
    with Memory(settings, start_background=False) as dst:  # model never loaded: the queue keeps the tasks
        result = dst.import_memories("ana.jsonl")
        assert result["queued_for_embedding"] == 14
        assert dst.get_queue_status()["depth"] == 14
        assert SqliteMemories(dst.storage.db.connection()).count(Scope()) == 12
