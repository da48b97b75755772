"""Export/import files at the edges (issue 17): grants inside files, odd names and file types,
profiles without a timestamp and vectors that contradict their model's dimension."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_portability import HEADER, open_memory

from cpersona.acl import WILDCARD, Client, Level
from cpersona.errors import Forbidden, InvalidInput
from cpersona.portability.grants import FileScope
from cpersona.portability.paths import PathRefused
from cpersona.server.dispatch import dispatch_tool


def write_lines(path: Path, *records: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(r) for r in (HEADER, *records)) + "\n")
    return path


def vector_record(content: str, model: str, dim: int, **extra: Any) -> dict[str, Any]:
    v = (np.ones(dim) / np.sqrt(dim)).astype("<f4")
    return {
        "type": "memory",
        "agent_id": "a",
        "content": content,
        "embedding": base64.b64encode(v.tobytes()).decode(),
        "embedding_model": model,
        "embedding_dim": dim,
        **extra,
    }


def stored_vectors(db: Path) -> dict[str, tuple[Any, Any]]:
    conn = sqlite3.connect(db)
    try:
        return {
            c: (m, d)
            for c, m, d in conn.execute("SELECT content, embedding_model, embedding_dim FROM memories")
        }
    finally:
        conn.close()


# -- defect 7: names the file system cannot hold ----------------------------------------------


@pytest.mark.parametrize("name", ["x" * 300 + ".jsonl", "sub/" + "y" * 256, "é" * 200 + ".jsonl"])
def test_a_file_name_too_long_is_a_clear_error_not_internal(tmp_path: Path, name: str) -> None:
    with open_memory(tmp_path, "db") as mem:
        mem.store("a", "one row")
        for tool, args in (
            ("export_memories", {"agent_id": "a", "output_path": name}),
            ("import_memories", {"input_path": name}),
            ("import_memories", {"input_path": name, "dry_run": True}),
        ):
            out = dispatch_tool(mem, mem.settings, tool, args)
            assert out["ok"] is False and out["error_code"] == "invalid_input", out
            assert "too long" in out["error"] and "255" in out["error"]
    assert not any(p.name.endswith(".partial") for p in tmp_path.rglob("*"))


@pytest.mark.parametrize("name", ["\ud800", "sub/\udfff.jsonl", "a\ud800b.jsonl"])
def test_a_lone_surrogate_in_a_path_is_refused_not_internal(tmp_path: Path, name: str) -> None:
    # The in-process fuzz found it once it refused "internal" (issue 36 point 12): os.open raised.
    with open_memory(tmp_path, "db") as mem:
        for tool, args in (
            ("export_memories", {"agent_id": "a", "output_path": name}),
            ("import_memories", {"input_path": name}),
        ):
            out = dispatch_tool(mem, mem.settings, tool, args)
            assert out["ok"] is False and out["error_code"] == "path_refused", out
            assert "surrogate" in out["error"]


def test_a_long_but_legal_name_exports_without_a_too_long_temp_name(tmp_path: Path) -> None:
    name = "z" * 249 + ".jsonl"
    with open_memory(tmp_path, "db") as mem:
        mem.store("a", "one row")
        out = mem.export_memories("a", name)
        assert Path(out["path"]).name == name
        assert mem.import_memories(name, "b")["counts"]["memories"]["inserted"] == 1


# -- defect 6: a profile line without updated_at ----------------------------------------------


def test_a_profile_without_updated_at_never_replaces_the_stored_one(tmp_path: Path) -> None:
    with open_memory(tmp_path, "db") as mem:
        mem.update_profile("victim", "victim real profile")
        path = write_lines(
            tmp_path / "exports" / "p.jsonl",
            {"type": "profile", "agent_id": "victim", "content": "attacker profile"},
        )
        for _ in range(2):
            out = mem.import_memories(path.name)
            assert out["counts"]["profiles"] == {"inserted": 0, "updated": 0, "kept": 0}
            assert out["error_count"] == 1 and "updated_at" in out["errors"][0]["error"]
            assert mem.get_profile("victim")["profile"] == "victim real profile"
        # Where there is no profile yet, the line is still refused: it carries no time to compare later.
        assert mem.import_memories(path.name, "newcomer")["error_count"] == 1
        assert mem.get_profile("newcomer")["profile"] is None


# -- defect 2: a vector that contradicts its model's known dimension --------------------------


def test_a_vector_contradicting_its_models_dimension_is_not_stored_as_that_models(tmp_path: Path) -> None:
    with open_memory(tmp_path, "db") as mem:
        path = write_lines(
            tmp_path / "exports" / "v.jsonl",
            vector_record("ten-d claiming minilm", "all-minilm-l6-v2", 10),
            vector_record("real minilm width", "all-minilm-l6-v2", 384),
            vector_record("a matryoshka cut", "jina-v5-nano@256", 256),
            vector_record("a cut jina does not offer", "jina-v5-nano@100", 100),
            vector_record("jina without a cut", "jina-v5-nano", 256),
            vector_record("cut id disagreeing with its dim", "jina-v5-nano@128", 64),
            vector_record("a model the registry does not know", "my-own-model", 10),
        )
        dry = mem.import_memories(path.name, dry_run=True)
        out = mem.import_memories(path.name)
        for result in (dry, out):
            assert result["error_count"] == 0 and result["counts"]["memories"]["inserted"] == 7
            assert result["vectors_dropped"] == 4
    vectors = stored_vectors(tmp_path / "db" / "memory.db")
    assert vectors["ten-d claiming minilm"] == (None, None)
    assert vectors["a cut jina does not offer"] == (None, None)
    assert vectors["jina without a cut"] == (None, None)
    assert vectors["cut id disagreeing with its dim"] == (None, None)
    assert vectors["real minilm width"] == ("all-minilm-l6-v2", 384)
    assert vectors["a matryoshka cut"] == ("jina-v5-nano@256", 256)
    assert vectors["a model the registry does not know"] == ("my-own-model", 10)


# -- defect 1 at the API: the grants of the agents inside the file -----------------------------


def scope_for(grants: dict[str, Level], name: str = "C") -> FileScope:
    return FileScope.of(Client(name, "0" * 64, grants))


def test_each_acl_client_has_its_own_folder(tmp_path: Path) -> None:
    with open_memory(tmp_path, "db") as mem:
        mem.store("c", "charlie")
        out = mem.export_memories("c", "c.jsonl", scope=scope_for({"c": Level.ADMIN}))
        assert Path(out["path"]) == (tmp_path / "exports" / "clients" / "C" / "c.jsonl").resolve()
        plain = mem.export_memories("c", "c.jsonl")  # no ACL (stdio, API): the shared folder
        assert Path(plain["path"]) == (tmp_path / "exports" / "c.jsonl").resolve()
        with pytest.raises(PathRefused):
            mem.import_memories(plain["path"], "c", scope=scope_for({"c": Level.ADMIN}))
        # A symlink planted as the client's folder is not followed.
        outside = tmp_path / "outside"
        outside.mkdir()
        os.symlink(outside, tmp_path / "exports" / "clients" / "D")
        with pytest.raises(PathRefused, match="symlink"):
            mem.export_memories("c", "x.jsonl", scope=scope_for({"c": Level.ADMIN}, "D"))
        assert list(outside.iterdir()) == []


def test_import_needs_read_on_every_agent_inside_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "exports" / "clients" / "C"
    with open_memory(tmp_path, "db") as mem:
        mixed = write_lines(
            folder / "mixed.jsonl",
            {"type": "memory", "agent_id": "c", "content": "charlie's"},
            {"type": "memory", "agent_id": "b", "content": "bravo's"},
        )
        nameless = write_lines(folder / "nameless.jsonl", {"type": "memory", "content": "whose?"})
        b_header = write_lines(
            folder / "bhead.jsonl", {"type": "memory", "agent_id": "c", "content": "c row"}
        )
        b_header.write_text(
            json.dumps({**HEADER, "agent_id": "b"}) + "\n" + b_header.read_text().split("\n", 1)[1]
        )
        only_c = scope_for({"c": Level.ADMIN})
        for path in (mixed, nameless, b_header):
            for dry_run in (True, False):
                with pytest.raises(Forbidden) as info:
                    mem.import_memories(path.name, "c", dry_run=dry_run, scope=only_c)
                assert "'b'" not in str(info.value)
        assert mem.list_memories("c")["total"] == 0  # nothing half-imported
        reader = scope_for({"c": Level.ADMIN, "b": Level.READ})
        assert mem.import_memories(mixed.name, "c", scope=reader)["counts"]["memories"]["inserted"] == 2
        # Without a target each row lands in its own agent: admin on each is needed.
        with pytest.raises(Forbidden):
            mem.import_memories(mixed.name, scope=scope_for({"c": Level.ADMIN, "b": Level.WRITE}))
        everything = scope_for({WILDCARD: Level.ADMIN}, "C")
        assert mem.import_memories(nameless.name, "c", scope=everything)["ok"]


def test_replacing_a_file_needs_admin_on_every_agent_it_holds(tmp_path: Path) -> None:
    folder = tmp_path / "exports" / "clients" / "C"
    with open_memory(tmp_path, "db") as mem:
        mem.store("c", "charlie")
        held = write_lines(folder / "b.jsonl", {"type": "memory", "agent_id": "b", "content": "bravo's"})
        before = held.read_bytes()
        only_c = scope_for({"c": Level.ADMIN})
        with pytest.raises(Forbidden):
            mem.export_memories("c", "b.jsonl", overwrite=True, scope=only_c)
        assert held.read_bytes() == before
        (folder / "notes.txt").write_text("not an export\n")
        assert mem.export_memories("c", "notes.txt", overwrite=True, scope=only_c)["ok"]
        assert mem.export_memories("c", "c.jsonl", scope=only_c)["ok"]
        assert mem.export_memories("c", "c.jsonl", overwrite=True, scope=only_c)["ok"]  # its own file


# -- files that are not regular files ----------------------------------------------------------


def test_fifos_and_directories_are_refused_and_kept(tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    exports.mkdir()
    os.mkfifo(exports / "pipe.jsonl")
    (exports / "dir.jsonl").mkdir()
    with open_memory(tmp_path, "db") as mem:
        mem.store("a", "row")
        for name in ("pipe.jsonl", "dir.jsonl"):
            with pytest.raises(InvalidInput, match="not a regular file|directory"):
                mem.export_memories("a", name, overwrite=True)
            with pytest.raises(InvalidInput, match="not a regular file|directory"):
                mem.import_memories(name)  # never blocks waiting for a writer
    assert (exports / "pipe.jsonl").is_fifo() and (exports / "dir.jsonl").is_dir()


def test_any_symlink_under_the_export_folder_is_refused(tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    (exports / "real").mkdir(parents=True)
    write_lines(exports / "real" / "f.jsonl", {"type": "memory", "agent_id": "a", "content": "x"})
    os.symlink(exports / "real", exports / "alias")  # points inside, but names are never followed
    os.symlink(exports / "real" / "f.jsonl", exports / "f-link.jsonl")
    with open_memory(tmp_path, "db") as mem:
        for path in ("alias/f.jsonl", "f-link.jsonl"):
            with pytest.raises(PathRefused, match="symlink"):
                mem.import_memories(path)
        with pytest.raises(PathRefused, match="symlink"):
            mem.export_memories("a", "f-link.jsonl", overwrite=True)
        assert mem.import_memories("real/f.jsonl")["counts"]["memories"]["inserted"] == 1
    assert (exports / "f-link.jsonl").is_symlink()
