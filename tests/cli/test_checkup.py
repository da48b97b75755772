"""`cpersona checkup` and `cpersona doctor` run as the installed script on real damaged database files."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import pytest
from health_damage import CAP, damage_file, damage_rows, row, seed

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.memory import Memory
from cpersona.storage.migrations import LATEST_VERSION


def cpersona() -> str:
    import shutil
    import sys

    beside = Path(sys.executable).with_name("cpersona")
    return str(beside) if beside.exists() else str(shutil.which("cpersona"))


def env_for(tmp: Path, **extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CPERSONA_", "EMBEDDING_"))}
    base.update({
        "CPERSONA_DB_PATH": str(tmp / "memory.db"),
        "CPERSONA_MODELS_DIR": str(tmp / "models"),
        "CPERSONA_EMBEDDING_MODE": "none",
        "CPERSONA_AUTO_FETCH_MODEL": "false",
        "CPERSONA_UPDATE_CHECK": "false",
        "CPERSONA_MAX_CONTENT_LENGTH": str(CAP),
        "HF_HUB_OFFLINE": "1",
    })
    base.update(extra)
    return base


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([cpersona(), *args], env=env, capture_output=True, text=True, timeout=300)


def create(path: Path) -> None:
    settings = Settings(db_path=path, embedding_mode="none", auto_fetch_model=False, update_check=False)
    with Memory(settings, backend=NoEmbeddings(), start_background=False) as memory:
        memory.store("seed", "the file exists")


def snapshot(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(directory.iterdir()) if p.is_file()}


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
        conn.execute("INSERT INTO memories(agent_id, content, timestamp, created_at) VALUES ('w', 'in the wal', "
                     "'2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z')")
        before = {k: v for k, v in snapshot(tmp_path).items() if not k.endswith("-shm")}
        assert "memory.db-wal" in before
        result = run(env_for(tmp_path), "checkup", "--json")
        assert result.returncode == 0, result.stdout + result.stderr
        assert json.loads(result.stdout)["stats"]["rows_per_agent"]["w"]["memories"] == 1
        after = {k: v for k, v in snapshot(tmp_path).items() if not k.endswith("-shm")}
        assert after == before


@pytest.mark.slow
def test_checkup_fix_queues_and_backfills_null_vectors_with_minilm(tmp_path: Path, minilm_models_dir: Path) -> None:
    env = env_for(tmp_path, CPERSONA_EMBEDDING_MODE="onnx", CPERSONA_EMBEDDING_MODEL="all-minilm-l6-v2",
                  CPERSONA_MODELS_DIR=str(minilm_models_dir))
    for text in ("The cat sits on the mat.", "The stock market fell sharply."):
        stored = run(env, "store", "vec", text, "--json")
        assert json.loads(stored.stdout)["embedded"] is True, stored.stdout + stored.stderr
    db = tmp_path / "memory.db"
    with closing(sqlite3.connect(str(db), isolation_level=None)) as conn:
        conn.execute("UPDATE memories SET embedding = NULL, embedding_model = NULL, embedding_dim = NULL WHERE id = 1")

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
    result = run(env_for(tmp_path, CPERSONA_AUTH_TOKEN=secret, CPERSONA_EMBEDDING_MODE="onnx",
                         CPERSONA_EMBEDDING_MODEL="all-minilm-l6-v2"), "doctor")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert secret not in out and secret not in result.stderr
    assert str(db) in out and f"schema {LATEST_VERSION}/{LATEST_VERSION}" in out and "auth token set" in out
    assert "installed: no" in out and "fetch-model" in out  # the fault carries its fix command
    assert "cpersona checkup" in out
    as_json = json.loads(run(env_for(tmp_path), "doctor", "--json").stdout)
    assert as_json["embedding"]["mode"] == "none" and as_json["database"]["exists"] is True
