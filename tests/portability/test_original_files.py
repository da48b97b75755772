"""Importing the original CPersona's export files (cpersona-export/1.0 from 2.5.12, /1.1 from 2.6.14) and its
database files into an existing database, with the same rules as our own format: idempotence, dry run,
target_agent_id, bad lines reported by number, ACL grants. Fixtures written by the original itself."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_move_in import FIXTURES, MINILM_LABEL, rows, settings_at

from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.errors import Forbidden
from cpersona.memory import Memory
from cpersona.portability.grants import FileScope


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    settings = settings_at(tmp_path / "mine" / "memory.db", export_dir=tmp_path / "exports")
    (tmp_path / "mine").mkdir()
    with Memory(settings, backend=NoEmbeddings(), start_background=False) as mem:
        yield mem


def _export(version: str, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"original-{version}.jsonl"
    target.write_bytes((FIXTURES / f"original-{version}.jsonl").read_bytes())
    return target


def _original_db(folder: Path, name: str = "original-2.5.12") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "theirs.db"
    target.write_bytes(gzip.decompress((FIXTURES / f"{name}.db.gz").read_bytes()))
    return target


def _inserted(result: dict[str, Any]) -> dict[str, int]:
    return {t: result["counts"][t].get("inserted", 0) for t in ("memories", "episodes", "profiles")}


@pytest.mark.parametrize(("version", "format_version"), [("2.5.12", "1.0"), ("2.6.14", "1.1")])
def test_an_original_export_file_imports_every_row_once(
    memory: Memory, tmp_path: Path, version: str, format_version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EMBEDDING_MODEL", MINILM_LABEL)
    path = _export(version, tmp_path / "files")
    dry = memory.import_memories(str(path), dry_run=True, confined=False)
    assert _inserted(dry) == {"memories": 24, "episodes": 3, "profiles": 2} and dry["dry_run"]
    assert memory.stats()["counts"] == {
        "memories": 0,
        "episodes": 0,
        "profiles": 0,
    }  # a dry run writes nothing
    result = memory.import_memories(str(path), confined=False)
    assert result["header"]["original_format"] == f"cpersona-export/{format_version}"
    assert _inserted(result) == {"memories": 24, "episodes": 3, "profiles": 2}
    assert result["error_count"] == 0 and result["vectors_dropped"] == 0
    assert result["counts"].get("vectors_not_kept", {}) == {}
    if version.startswith("2.6"):  # its declarations from a memory are links here; its aliases have no home
        assert result["counts"]["not_carried"] == {"entity alias": 1}
        # In a file its correction comes after the rows: carried as a `supersedes` link, not a supersede.
        assert result["counts"]["links"] == {"inserted": 3, "duplicates": 1, "dropped": 0}
        links = rows(memory.settings.db_path, "SELECT relation, to_id IS NULL, entity FROM memory_links")
        assert sorted(tuple(r) for r in links) == [
            ("mentions", 1, "Alice"),
            ("related_to", 0, None),
            ("supersedes", 0, None),
        ]
    mine = rows(memory.settings.db_path, "SELECT content, locked, msg_id, embedding_model FROM memories")
    theirs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    assert sorted(r["content"] for r in mine) == sorted(
        t["content"] for t in theirs if t["_type"] == "memory"
    )
    assert sum(r["locked"] for r in mine) == 2
    assert {r["embedding_model"] for r in mine} == {"all-minilm-l6-v2"}
    again = memory.import_memories(str(path), confined=False)  # idempotent
    assert _inserted(again) == {"memories": 0, "episodes": 0, "profiles": 0}
    assert again["counts"]["memories"]["duplicates"] == 24
    assert memory.stats()["counts"] == {"memories": 24, "episodes": 3, "profiles": 2}


def test_target_agent_id_and_bad_lines(memory: Memory, tmp_path: Path) -> None:
    path = _export("2.5.12", tmp_path / "files")
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2][:40]  # cut mid-object
    lines.insert(5, json.dumps({"_type": "memory", "agent_id": "alice"}))  # no content
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = memory.import_memories(str(path), target_agent_id="zed", confined=False)
    assert result["error_count"] == 2
    assert [e["line"] for e in result["errors"]] == [3, 6]
    assert "not valid JSON" in result["errors"][0]["error"] and "content" in result["errors"][1]["error"]
    assert _inserted(result)["memories"] == 23
    agents = {r[0] for r in rows(memory.settings.db_path, "SELECT DISTINCT agent_id FROM memories")}
    assert agents == {"zed"}


def test_an_original_export_needs_the_grants_of_its_agents(memory: Memory, tmp_path: Path) -> None:
    _export("2.5.12", tmp_path / "exports" / "clients" / "C")
    only_alice = FileScope(
        client="C",
        may_read=lambda a: a == "alice",
        may_admin=lambda a: a == "alice",
        reads_all=False,
        admins_all=False,
    )
    with pytest.raises(Forbidden, match="admin on every agent in the file"):
        memory.import_memories("original-2.5.12.jsonl", scope=only_alice)
    assert memory.stats()["counts"]["memories"] == 0
    alice_bob_carol = FileScope("C", lambda a: True, lambda a: a in ("alice", "bob", "carol"), False, False)
    assert _inserted(memory.import_memories("original-2.5.12.jsonl", scope=alice_bob_carol))["memories"] == 24


def test_an_original_database_imports_into_an_existing_one(
    memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EMBEDDING_MODEL", MINILM_LABEL)
    memory.store("alice", "a note that was here before")
    theirs = _original_db(tmp_path / "files")
    before = theirs.read_bytes()
    result = memory.import_memories(str(theirs), confined=False)
    assert _inserted(result) == {"memories": 24, "episodes": 3, "profiles": 2}
    assert result["header"]["original_schema_version"] == 13
    assert memory.stats()["counts"] == {"memories": 25, "episodes": 3, "profiles": 2}
    assert theirs.read_bytes() == before  # read from a copy; the original file is not touched
    assert _inserted(memory.import_memories(str(theirs), confined=False))["memories"] == 0


def test_an_original_database_in_the_export_folder_is_checked_against_grants(
    memory: Memory, tmp_path: Path
) -> None:
    _original_db(tmp_path / "exports" / "clients" / "C", "original-2.6.14")
    only_alice = FileScope("C", lambda a: a == "alice", lambda a: a == "alice", False, False)
    with pytest.raises(Forbidden):
        memory.import_memories("theirs.db", scope=only_alice)
    copying = memory.import_memories(
        "theirs.db",
        target_agent_id="alice",
        scope=FileScope("C", lambda a: True, lambda a: a == "alice", True, False),
    )
    assert _inserted(copying)["memories"] == 24
    assert copying["counts"]["not_carried"] == {"entity_aliases": 1}
    assert copying["counts"]["links"] == {"inserted": 2, "duplicates": 1, "dropped": 0}
    assert copying["counts"]["supersede_links"] == {"read": 1, "linked": 1, "skipped": 0}


def test_an_sqlite_file_that_is_not_the_original_is_refused(memory: Memory, tmp_path: Path) -> None:
    import sqlite3

    other = tmp_path / "files" / "other.db"
    other.parent.mkdir()
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    with pytest.raises(Exception, match="not one of the original CPersona's") as refused:
        memory.import_memories(str(other), confined=False)
    assert getattr(refused.value, "code", "") == "invalid_file"
