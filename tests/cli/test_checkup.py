"""`cpersona checkup` and `cpersona doctor` run as the installed script on real damaged database files."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from health_damage import CAP, damage_file, damage_rows, execute, row, seed
from model_fixtures import MINILM, install_with_mismatched_tokenizer
from pg_cluster import PG_VECTOR_INDEX, PgCluster

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.embed.runtime.onnx_backend import OnnxBackend
from cpersona.memory import Memory
from cpersona.storage.sqlite.migrations import LATEST_VERSION


def cpersona() -> str:
    import shutil
    import sys

    beside = Path(sys.executable).with_name("cpersona")
    return str(beside) if beside.exists() else str(shutil.which("cpersona"))


def env_for(tmp: Path, **extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CPERSONA_", "EMBEDDING_"))}
    base.update(
        {
            "CPERSONA_DB_PATH": str(tmp / "memory.db"),
            "CPERSONA_MODELS_DIR": str(tmp / "models"),
            "CPERSONA_EMBEDDING_MODE": "none",
            "CPERSONA_AUTO_FETCH_MODEL": "false",
            "CPERSONA_UPDATE_CHECK": "false",
            "CPERSONA_MAX_CONTENT_LENGTH": str(CAP),
            "HF_HUB_OFFLINE": "1",
        }
    )
    base.update(extra)
    return base


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([cpersona(), *args], env=env, capture_output=True, text=True, timeout=300)


def create(path: Path) -> None:
    settings = Settings(db_path=path, embedding_mode="none", auto_fetch_model=False, update_check=False)
    with Memory(settings, backend=NoEmbeddings(), start_background=False) as memory:
        memory.store("seed", "the file exists")


def snapshot(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(directory.iterdir()) if p.is_file()
    }


def test_checkup_on_a_damaged_copy_exits_nonzero_then_fix_then_zero(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    create(db)
    seed(db, "cli")
    rows = damage_rows(db, "cli")
    damage_file(db, "cli")
    env = env_for(tmp_path)
    before = snapshot(tmp_path)

    report = run(env, "checkup")
    assert report.returncode == 1, report.stdout + report.stderr
    assert "unhealthy" in report.stdout and "memories_fts_insert" in report.stdout
    # --fix is suggested for exactly the checks whose findings it repairs.
    suggestion = next(line for line in report.stdout.splitlines() if "checkup --fix" in line)
    assert suggestion == (
        "run `cpersona checkup --fix` to repair: duplicates, fts, invalid_json, oversized, schema, tasks, timestamps"
    )
    as_json = run(env, "checkup", "--json")
    assert as_json.returncode == 1
    parsed = json.loads(as_json.stdout)
    assert parsed["status"] == "unhealthy" and parsed["repairs"] == {}
    # Report-only runs wrote nothing: same files, same bytes, same modification times.
    assert snapshot(tmp_path) == before

    fixed = run(env, "checkup", "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "repaired schema" in fixed.stdout
    assert row(db, rows["bad_json"])["metadata"] == '{"invalid_json": "{not json"}'

    again = run(env, "checkup")
    assert again.returncode == 0, again.stdout
    assert again.stdout.startswith("status: healthy")


def test_checkup_degraded_exit_code_agent_scope_and_usage_errors(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    create(db)
    damage_rows(db, "other")
    env = env_for(tmp_path)
    assert run(env, "checkup", "--agent", "other", "--checks", "invalid_json").returncode == 3
    clean = run(env, "checkup", "--agent", "seed", "--checks", "invalid_json,timestamps")
    assert clean.returncode == 0, clean.stdout
    bad = run(env, "checkup", "--checks", "fts,bogus")
    assert bad.returncode == 2 and "bogus" in bad.stderr and "vector_window" in bad.stderr
    missing = run(env_for(tmp_path / "nowhere"), "checkup")
    assert missing.returncode == 1 and "no database" in missing.stderr


def test_report_only_checkup_writes_nothing_beside_a_live_writer(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    create(db)
    with closing(sqlite3.connect(str(db), isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(
            "INSERT INTO memories(agent_id, content, timestamp, created_at) VALUES ('w', 'in the wal', "
            "'2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z')"
        )
        before = {k: v for k, v in snapshot(tmp_path).items() if not k.endswith("-shm")}
        assert "memory.db-wal" in before
        result = run(env_for(tmp_path), "checkup", "--json")
        assert result.returncode == 0, result.stdout + result.stderr
        assert json.loads(result.stdout)["stats"]["rows_per_agent"]["w"]["memories"] == 1
        after = {k: v for k, v in snapshot(tmp_path).items() if not k.endswith("-shm")}
        assert after == before


@pytest.mark.slow
def test_checkup_fix_queues_and_backfills_null_vectors_with_minilm(
    tmp_path: Path, minilm_models_dir: Path, minilm_backend: OnnxBackend
) -> None:
    env = env_for(
        tmp_path,
        CPERSONA_EMBEDDING_MODE="onnx",
        CPERSONA_EMBEDDING_MODEL="all-minilm-l6-v2",
        CPERSONA_MODELS_DIR=str(minilm_models_dir),
    )
    db = tmp_path / "memory.db"
    # Seeded in-process with the session's loaded model (what is under test is checkup, not store).
    seeding = Settings(
        db_path=db,
        models_dir=minilm_models_dir,
        embedding_mode="onnx",
        embedding_model="all-minilm-l6-v2",
        auto_fetch_model=False,
        update_check=False,
    )
    with Memory(seeding, backend=minilm_backend) as memory:
        assert memory.wait_until_ready(60)
        for text in ("The cat sits on the mat.", "The stock market fell sharply."):
            stored = memory.store("vec", text)
            assert stored["embedded"] is True, stored
    with closing(sqlite3.connect(str(db), isolation_level=None)) as conn:
        conn.execute(
            "UPDATE memories SET embedding = NULL, embedding_model = NULL, embedding_dim = NULL WHERE id = 1"
        )

    report = run(env, "checkup", "--json")
    assert report.returncode == 3, report.stdout + report.stderr
    findings = json.loads(report.stdout)["findings"]
    assert any(f["check"] == "vectors" and f["severity"] == "warn" for f in findings)

    fixed = run(env, "checkup", "--fix", "--json")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert json.loads(fixed.stdout)["backfilled"] >= 1
    restored = row(db, 1)
    assert restored["embedding_model"] == "all-minilm-l6-v2" and restored["embedding_dim"] == 384
    assert run(env, "checkup").returncode == 0


def test_doctor_shows_one_screen_and_never_the_token(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    create(db)
    secret = "s3cret-token-value-123"
    result = run(
        env_for(
            tmp_path,
            CPERSONA_AUTH_TOKEN=secret,
            CPERSONA_EMBEDDING_MODE="onnx",
            CPERSONA_EMBEDDING_MODEL="all-minilm-l6-v2",
        ),
        "doctor",
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert secret not in out and secret not in result.stderr
    assert str(db) in out and f"schema {LATEST_VERSION}/{LATEST_VERSION}" in out and "auth token set" in out
    assert "installed: no" in out and "fetch-model" in out  # the fault carries its fix command
    assert "cpersona checkup" in out
    as_json = json.loads(run(env_for(tmp_path), "doctor", "--json").stdout)
    assert as_json["embedding"]["mode"] == "none" and as_json["database"]["exists"] is True


@pytest.mark.slow
def test_a_model_failing_its_self_test_is_shown_by_doctor_checkup_and_recall(
    tmp_path: Path, minilm_models_dir: Path
) -> None:
    # Issue 13: the real MiniLM graph with a tokenizer that does not fit it, recorded as installed.
    models = install_with_mismatched_tokenizer(minilm_models_dir, tmp_path / "models")
    db = tmp_path / "memory.db"
    create(db)
    env = env_for(tmp_path, CPERSONA_EMBEDDING_MODE="onnx", CPERSONA_EMBEDDING_MODEL=MINILM)

    doctor = run(env, "doctor")
    assert doctor.returncode == 0, doctor.stderr
    out = doctor.stdout
    assert "installed: yes" in out and "loaded: no (state fault)" in out
    evidence_line = next(line for line in out.splitlines() if line.strip().startswith("evidence:"))
    assert (
        "pair " in evidence_line and "own document cos" in evidence_line and "best other cos" in evidence_line
    )
    assert f"fix: reinstall the model (`cpersona fetch-model {MINILM}`" in out
    as_json = json.loads(run(env, "doctor", "--json").stdout)
    report = as_json["embedding"]
    assert report["evidence"] == evidence_line.strip().removeprefix("evidence: ")
    assert report["fix"] in as_json["next_steps"]

    checkup = run(env, "checkup", "--checks", "embedding")
    assert checkup.returncode == 1, checkup.stdout + checkup.stderr  # a model fault is critical
    assert report["evidence"] in checkup.stdout and "models --check" in checkup.stdout

    # The server's recall answers keyword-only and its advisory names the same pair and fix.
    settings = Settings(
        db_path=db,
        models_dir=models,
        embedding_mode="onnx",
        embedding_model=MINILM,
        auto_fetch_model=False,
        update_check=False,
    )
    with Memory(settings, start_background=False) as mem:
        assert not mem.embeddings.try_load()
        out_recall = mem.recall("seed", "file exists")
        assert out_recall["count"] == 1 and out_recall["search"]["vector"] is False
        advisory = out_recall["advisory"]
        assert advisory["state"] == "fault" and advisory["evidence"] == report["evidence"]
        assert advisory["runbook"] == report["fix"]


# -- PostgreSQL (CPERSONA_DB_URL) ------------------------------------------------------------------


@pytest.fixture
def pg_env(tmp_path: Path, pg_cluster: PgCluster) -> Iterator[tuple[dict[str, str], str]]:
    """The checkup environment on a fresh PostgreSQL database holding one memory, and its URL."""
    url = pg_cluster.create()
    settings = Settings(
        db_path=tmp_path / "unused.db",
        db_url=url,
        pg_vector_index=PG_VECTOR_INDEX,
        embedding_mode="none",
        auto_fetch_model=False,
        update_check=False,
    )
    with Memory(settings, backend=NoEmbeddings(), start_background=False) as memory:
        memory.store("seed", "the database exists")
    yield env_for(tmp_path, CPERSONA_DB_URL=url, CPERSONA_PG_VECTOR_INDEX=PG_VECTOR_INDEX), url
    pg_cluster.drop(url)


def _table_dump(url: str) -> list[dict[str, Any]]:
    return [
        *execute(url, "SELECT * FROM memories ORDER BY id"),
        *execute(url, "SELECT * FROM profiles"),
        *execute(url, "SELECT * FROM pending_memory_tasks ORDER BY id"),
    ]


def test_checkup_on_postgres_reports_read_only_then_fix_repairs(pg_env: tuple[dict[str, str], str]) -> None:
    env, url = pg_env
    seed(url, "cli")
    rows = damage_rows(url, "cli")
    damage_file(url, "cli")
    before = _table_dump(url)

    report = run(env, "checkup")
    assert report.returncode == 1, report.stdout + report.stderr
    assert "unhealthy" in report.stdout and "memories_dedup_content" in report.stdout
    assert "not applicable" in report.stdout and "amcheck" in report.stdout  # the file-only checks say so
    assert "WAL: server-wide" in report.stdout
    parsed = json.loads(run(env, "checkup", "--json").stdout)
    assert parsed["repairs"] == {} and parsed["stats"]["wal_bytes"] is None
    assert _table_dump(url) == before  # report-only wrote nothing

    fixed = run(env, "checkup", "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "repaired schema" in fixed.stdout and "repaired duplicates" in fixed.stdout
    assert row(url, rows["bad_json"])["metadata"] == '{"invalid_json": "{not json"}'
    assert row(url, rows["duplicate_copy"]) == {}
    again = run(env, "checkup")
    assert again.returncode == 0 and again.stdout.startswith("status: healthy"), again.stdout


def test_doctor_on_postgres_names_the_engine_and_hides_the_password(
    pg_env: tuple[dict[str, str], str],
) -> None:
    from cpersona.storage.postgres.migrations import LATEST_VERSION as PG_LATEST

    env, url = pg_env
    password = urlsplit(url).password
    result = run(env, "doctor")
    assert result.returncode == 0, result.stderr
    assert f"schema {PG_LATEST}/{PG_LATEST}" in result.stdout and "server-wide" in result.stdout
    report = json.loads(run(env, "doctor", "--json").stdout)
    database = report["database"]
    assert database["exists"] is True and database["engine"] == "postgresql" and database["bytes"] > 0
    assert database["wal_bytes"] is None and set(database["not_applicable"]) == {
        "wal_bytes",
        "freelist_count",
    }
    assert report["db_path"].startswith("postgresql://")
    if password:
        assert password not in result.stdout and password not in json.dumps(report)


def test_checkup_on_an_unreachable_postgres_exits_1(tmp_path: Path) -> None:
    env = env_for(tmp_path, CPERSONA_DB_URL=f"postgresql://nobody@/none?host={tmp_path}")
    result = run(env, "checkup")
    assert result.returncode == 1 and "cannot open the PostgreSQL database" in result.stderr
    doctor = json.loads(run(env, "doctor", "--json").stdout)
    assert doctor["database"]["exists"] is False and "cannot open" in doctor["database"]["problem"]
