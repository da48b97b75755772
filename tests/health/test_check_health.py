"""check_health on deliberately damaged real databases (a SQLite file and a PostgreSQL database): found,
fixed by fix=true, clean on the next run, locks honoured."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from health_damage import CAP, damage_file, damage_rows, execute, is_postgres, location, row, seed
from pg_cluster import ENGINES, PG_VECTOR_INDEX, PgCluster

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.health.checks import MAX_REPAIRS_PER_CHECK, Finding, check_names, verdict
from cpersona.memory import Memory
from cpersona.runtime import persistence
from cpersona.services.maintenance import UnknownCheck


@pytest.fixture(params=ENGINES)
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    url = None
    if request.param == "postgres":
        cluster: PgCluster = request.getfixturevalue("pg_cluster")
        url = cluster.create()
    settings = Settings(
        db_path=tmp_path / "memory.db",
        db_url=url,
        pg_vector_index=PG_VECTOR_INDEX,
        models_dir=tmp_path / "models",
        embedding_mode="none",
        update_check=False,
        auto_fetch_model=False,
        max_content_length=CAP,
        operating_context_path=tmp_path / "operating-context.toml",
    )
    try:
        with Memory(settings, backend=NoEmbeddings()) as memory:
            memory.wait_until_ready(5)
            yield memory
    finally:
        if url is not None:
            cluster.drop(url)


def by_check(
    result: dict[str, Any], severities: tuple[str, ...] = ("critical", "warn")
) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for f in result["findings"]:
        if f["severity"] in severities:
            out.setdefault(f["check"], []).append(f)
    return out


def refs_of(result: dict[str, Any]) -> set[str]:
    return {r for f in result["findings"] for r in f.get("refs", [])}


def test_a_fresh_database_is_healthy(mem: Memory) -> None:
    mem.store("a", "a perfectly ordinary memory")
    result = mem.check_health()
    assert result["ok"] is True and result["status"] == "healthy"
    assert result["checks_run"] == check_names()
    assert result["repairs"] == {}
    stats = result["stats"]
    assert stats["rows_per_agent"]["a"]["memories"] == 1
    assert stats["db_bytes"] > 0 and "wal_bytes" in stats
    assert stats["memories_per_project"][0]["memories"] == 1


def test_every_damage_is_found_fixed_and_clean_on_the_next_run(mem: Memory) -> None:
    path = location(mem)
    pg = is_postgres(path)
    seed(path, "victim")
    rows = damage_rows(path, "victim")
    files = damage_file(path, "victim")
    # The keyword-index damage exists only where the engine does not keep the index itself (SQLite FTS5).
    damaged = {"schema", "duplicates", "oversized", "invalid_json", "timestamps", "tasks"} | (
        set() if pg else {"fts"}
    )

    report = mem.check_health()
    assert report["status"] == "unhealthy"  # a missing unique index (and, on SQLite, trigger) is critical
    found = by_check(report)
    assert set(found) >= damaged
    schema_text = " ".join(f["message"] for f in found["schema"])
    assert ("memory_tokens_read" if pg else "memories_fts_insert") in schema_text
    assert "memories_dedup_content" in schema_text
    assert f"mem:{rows['oversized']}" in found["oversized"][0]["refs"]
    assert f"mem:{rows['bad_json']}" in found["invalid_json"][0]["refs"]
    assert f"mem:{rows['naive_ts']}" in found["timestamps"][0]["refs"]
    assert f"mem:{rows['duplicate_copy']}" in found["duplicates"][0]["refs"]
    if not pg:
        fts_refs = found["fts"][0]["refs"]
        assert f"mem:{files['fts_deleted']}" in fts_refs and f"mem:{files['unindexed']}" in fts_refs
    # A report-only run changed nothing.
    assert row(path, rows["oversized"])["content"].endswith("x" * 100)
    assert mem.check_health()["findings"] == report["findings"]

    fixed = mem.check_health(fix=True)
    assert fixed["status"] == "healthy", fixed["findings"]
    for name in damaged:
        assert fixed["repairs"][name]["fixed"] >= 1 and fixed["repairs"][name]["remaining"] == 0, name

    assert len(row(path, rows["oversized"])["content"]) == CAP
    assert row(path, rows["bad_json"])["metadata"] == '{"invalid_json": "{not json"}'
    assert row(path, rows["naive_ts"])["timestamp"] == "2024-01-02T03:04:05.000000Z"
    assert row(path, rows["duplicate_copy"]) == {} and row(path, rows["duplicate_original"]) != {}
    # The rebuilt (or recreated) index finds the rows keyword search missed, and new rows are indexed.
    hits = mem.recall("victim", "written while the trigger", limit=5)["results"]
    assert any(r.get("id") == files["unindexed"] for r in hits)
    stored = mem.store("victim", "a brand new row after the repair")
    assert stored["result"] == "stored"
    assert mem.store("victim", "a brand new row after the repair")["result"] == "skipped"

    again = mem.check_health()
    assert again["status"] == "healthy" and by_check(again) == {}


def test_locked_damaged_rows_stay_reported_and_untouched(mem: Memory) -> None:
    path = location(mem)
    rows = damage_rows(path, "keeper", locked=True)
    before = {k: row(path, v) for k, v in rows.items()}
    result = mem.check_health(fix=True)
    for key in ("oversized", "bad_json", "naive_ts", "duplicate_copy"):
        assert row(path, rows[key]) == before[key], key
    # The unlocked original of the duplicate pair went; the locked copy is kept.
    assert row(path, rows["duplicate_original"]) == {}
    found = by_check(mem.check_health())
    assert set(found) >= {"oversized", "invalid_json", "timestamps"}
    assert "duplicates" not in found
    assert result["status"] == "degraded"
    assert "locked" in found["oversized"][0]["message"]


def test_an_agent_scope_neither_reports_nor_fixes_another_agents_damage(mem: Memory) -> None:
    path = location(mem)
    mine = damage_rows(path, "me")
    theirs = damage_rows(path, "them")
    theirs_before = {k: row(path, v) for k, v in theirs.items()}

    scoped = mem.check_health("me")
    their_refs = {f"mem:{i}" for i in theirs.values()}
    assert refs_of(scoped) & their_refs == set()
    assert {f"mem:{mine['bad_json']}", f"mem:{mine['oversized']}"} <= refs_of(scoped)
    assert set(scoped["stats"]["rows_per_agent"]) == {"me"}

    mem.check_health("me", fix=True)
    for key, value in theirs_before.items():
        assert row(path, theirs[key]) == value, key
    assert row(path, mine["bad_json"])["metadata"] == '{"invalid_json": "{not json"}'
    assert refs_of(mem.check_health("them")) >= {f"mem:{theirs['bad_json']}", f"mem:{theirs['oversized']}"}


def test_unknown_check_names_are_refused_with_the_valid_ones(mem: Memory) -> None:
    with pytest.raises(UnknownCheck) as refused:
        mem.check_health(checks=["fts", "no_such_check"])
    assert "no_such_check" in str(refused.value)
    assert refused.value.details() == {"valid_checks": check_names()}
    assert all(name in str(refused.value) for name in check_names())


def test_checks_subset_runs_only_those_in_registry_order(mem: Memory) -> None:
    result = mem.check_health(checks=["tasks", "fts"])
    assert result["checks_run"] == ["fts", "tasks"]
    assert set(result["checks"]) == {"fts", "tasks"}


def test_fix_while_paused_is_report_only(mem: Memory) -> None:
    rows = damage_rows(location(mem), "p")
    before = row(location(mem), rows["bad_json"])
    persistence.PROCESS.pause(60)  # the process-wide pause is what turns repairs off
    try:
        result = mem.check_health(fix=True)
    finally:
        persistence.PROCESS.resume()
    assert "paused" in result["note"]
    assert result["fix"] is False and result["fix_downgraded"] is True and result["repairs"] == {}
    assert row(location(mem), rows["bad_json"]) == before


def test_repairs_are_bounded_and_report_remaining(mem: Memory) -> None:
    from health_damage import connect

    n = MAX_REPAIRS_PER_CHECK + 5
    with connect(location(mem)) as raw:
        raw.executemany(
            "INSERT INTO memories(agent_id, content, timestamp, created_at) VALUES ('bulk', ?, '2024-05-06 07:08:09', "
            "'2026-01-01T00:00:00.000000Z')",
            [(f"row {i}",) for i in range(n)],
        )
    first = mem.check_health("bulk", fix=True, checks=["timestamps"])
    assert first["repairs"]["timestamps"] == {"fixed": MAX_REPAIRS_PER_CHECK, "remaining": 5}
    assert first["status"] == "degraded"
    second = mem.check_health("bulk", fix=True, checks=["timestamps"])
    assert second["repairs"]["timestamps"] == {"fixed": 5, "remaining": 0}
    assert second["status"] == "healthy"


def test_empty_content_is_reported_not_deleted(mem: Memory) -> None:
    from health_damage import connect, insert_memory

    with connect(location(mem)) as raw:
        rid = insert_memory(raw, "e", " \n ")
    result = mem.check_health("e", fix=True)
    assert by_check(result)["empty_content"][0]["refs"] == [f"mem:{rid}"]
    assert row(location(mem), rid) != {}


def test_oversized_profiles_are_cut(mem: Memory) -> None:
    cap = mem.settings.max_profile_length
    execute(
        location(mem),
        "INSERT INTO profiles(agent_id, content, updated_at) VALUES ('pr', ?, '2026-01-01T00:00:00.000000Z')",
        ("p" * (cap + 10),),
    )
    assert "oversized" in by_check(mem.check_health("pr"))
    mem.check_health("pr", fix=True)
    assert len(mem.get_profile("pr")["profile"]) == cap
    assert mem.check_health("pr")["status"] == "healthy"


def test_a_malformed_operating_context_is_a_warning_and_off_is_silent(mem: Memory) -> None:
    path = mem.settings.operating_context_path
    assert "operating_context" not in by_check(
        mem.check_health(), ("critical", "warn", "info")
    )  # missing: normal
    path.write_text('[rules]\nlanguage = "English"\n', encoding="utf-8")
    assert mem.check_health()["status"] == "healthy"
    path.write_text('[rules]\nlanguage = "English"\ntone = \n', encoding="utf-8")  # no value on line 3
    report = mem.check_health(fix=True)
    assert report["status"] == "degraded"
    (finding,) = by_check(report)["operating_context"]
    assert (
        finding["severity"] == "warn" and "line 3" in finding["message"] and str(path) in finding["message"]
    )
    assert "report only" in finding["fix"] and "operating_context" not in report["repairs"]
    assert path.read_text(encoding="utf-8").endswith(
        "tone = \n"
    )  # fix=true never touches the operator's file
    # Scoped to an agent it still runs (the file is not an agent's), and checks=[...] can ask for it alone.
    assert report["checks"]["operating_context"]["status"] == "degraded"
    assert mem.check_health("someone", checks=["operating_context"])["status"] == "degraded"
    off = replace(mem.settings, operating_context=False)
    with Memory(off, backend=NoEmbeddings()) as other:
        assert other.check_health(checks=["operating_context"])["status"] == "healthy"


def test_verdict_rules() -> None:
    def f(sev: str) -> Finding:
        return Finding("x", sev, "m")

    assert verdict([]) == "healthy"
    assert verdict([f("info"), f("info")]) == "healthy"
    assert verdict([f("info"), f("warn")]) == "degraded"
    assert verdict([f("warn"), f("critical")]) == "unhealthy"


def test_failing_tasks_are_reported_with_the_last_error_and_only_to_their_agent(mem: Memory) -> None:
    # One task that failed often (its row is "a"'s) and one that waits for days (its row is "b"'s).
    path = location(mem)
    tried = mem.store("a", "a row whose embedding keeps failing")["id"]
    waiting = mem.store("b", "a row whose embedding waits for days")["id"]
    task = (
        "INSERT INTO pending_memory_tasks(kind, target_table, target_id, not_before, created_at, attempts, "
        "last_error) VALUES ('embed', 'memories', ?, ?, ?, ?, ?)"
    )
    now = "2099-01-01T00:00:00.000000Z"  # queued "now" as far as the 24-hour rule goes
    execute(path, task, (tried, now, now, 7, "model exploded"))
    execute(path, task, (waiting, now, "2020-01-01T00:00:00.000000Z", 0, None))
    tasks = by_check(mem.check_health(checks=["tasks"]))["tasks"]
    assert len(tasks) == 1 and tasks[0]["count"] == 2
    assert set(tasks[0]["refs"]) == {f"mem:{tried}", f"mem:{waiting}"}
    assert "last error: model exploded" in tasks[0]["message"] and tasks[0]["fixable"] is False
    only_a = by_check(mem.check_health(agent_id="a", checks=["tasks"]))["tasks"]
    assert only_a[0]["count"] == 1 and only_a[0]["refs"] == [f"mem:{tried}"]
    assert "tasks" not in by_check(mem.check_health(agent_id="nobody", checks=["tasks"]))
