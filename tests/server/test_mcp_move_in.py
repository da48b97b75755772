"""A host entry written for the original CPersona, with only the command changed: ``cpersona serve`` over stdio
with a real MCP client, on a database the original 2.6.14 wrote and with the original's variable names.
And a file that is no memory database: the server and the CLI refuse it in one line, its bytes untouched."""

from __future__ import annotations

import gzip
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from mcp_helpers import cpersona_executable, full_env, mcp_session, stdio_target

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parents[1] / "portability" / "fixtures"


def original_host_env(tmp: Path) -> dict[str, str]:
    """What a host entry for the original sets: its database path and its own variable names."""
    return {
        "CPERSONA_DB_PATH": str(tmp / "memory.db"),
        "EMBEDDING_MODE": "none",
        "EMBEDDING_MODEL": "all-MiniLM-L6-v2",
        "CPERSONA_FTS_ENABLED": "true",
        "CPERSONA_EXPORT_DIR": str(tmp / "exports"),
        "CPERSONA_MODELS_DIR": str(tmp / "models"),
        "CPERSONA_UPDATE_CHECK": "false",
        "CPERSONA_OPERATING_CONTEXT": "off",
        "HF_HUB_OFFLINE": "1",
    }


def test_serve_moves_the_original_database_in_and_answers(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    db.write_bytes(gzip.decompress((FIXTURES / "original-2.6.14.db.gz").read_bytes()))
    (tmp_path / "exports").mkdir()
    shutil.copyfile(FIXTURES / "original-2.5.12.jsonl", tmp_path / "exports" / "from-2.5.jsonl")
    with mcp_session(stdio_target(original_host_env(tmp_path))) as session:
        for agent in ("alice", "bob", "carol"):  # per agent as the original held them
            assert session.call("list_memories", {"agent_id": agent})["total"] == 8
            assert session.call("list_episodes", {"agent_id": agent})["total"] == 1
        assert session.call("get_profile", {"agent_id": "bob"})["profile"].startswith("Bob: chess")
        found = session.call("recall", {"agent_id": "alice", "query": "green tea"})
        assert any("green tea" in r["content"] for r in found["results"])
        imported = session.call("import_memories", {"input_path": "from-2.5.jsonl"})
        assert imported["header"]["original_format"] == "cpersona-export/1.0"
        assert imported["counts"]["memories"] == {"inserted": 0, "duplicates": 24}  # the same rows
        other = sqlite3.connect(tmp_path / "exports" / "other.db")
        other.execute("CREATE TABLE t (x)")
        other.close()
        not_theirs = session.call("import_memories", {"input_path": "other.db"})
        assert not_theirs["ok"] is False and not_theirs["error_code"] == "invalid_file"
        assert "not one of the original CPersona's" in not_theirs["error"]
        refused = session.call("import_memories", {"input_path": "from-2.5.jsonl", "target_agent_id": 7})
        assert refused["ok"] is False and refused["error_code"] == "invalid_input"
    assert list(tmp_path.glob("memory.original-v21-*.db")) and (tmp_path / "memory.db.moved-in.json").exists()


def test_a_foreign_file_is_refused_by_serve_and_stats_untouched(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    env = full_env(original_host_env(tmp_path))
    for args in (["serve"], ["stats"]):
        done = subprocess.run(
            [cpersona_executable(), *args], env=env, input=b"", capture_output=True, timeout=120, check=False
        )
        lines = [line for line in done.stderr.decode().splitlines() if "is not a CPersona database" in line]
        assert done.returncode == 1 and len(lines) == 1, done.stderr.decode()
        assert "CPERSONA_DB_PATH" in lines[0]
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.db"]
