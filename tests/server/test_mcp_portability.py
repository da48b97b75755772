"""The portability tools through a real MCP client over stdio against the installed ``cpersona serve``,
on a SQLite file and on PostgreSQL."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_helpers import McpSession, mcp_session, server_env, stdio_target, unique
from pg_cluster import ENGINES, PG_VECTOR_INDEX, PgCluster

pytestmark = pytest.mark.slow

next_agent = unique("port")


@pytest.fixture(scope="module", params=ENGINES)
def port_session(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[McpSession, Path]]:
    tmp = tmp_path_factory.mktemp("port")
    exports = tmp / "exports"
    extra: dict[str, str] = {}
    cluster: PgCluster | None = None
    if request.param == "postgres":
        cluster = request.getfixturevalue("pg_cluster")
        extra = {"CPERSONA_DB_URL": cluster.create(), "CPERSONA_PG_VECTOR_INDEX": PG_VECTOR_INDEX}
    with mcp_session(stdio_target(server_env(tmp, CPERSONA_EXPORT_DIR=str(exports), **extra))) as session:
        yield session, exports
    if cluster is not None:
        cluster.drop(extra["CPERSONA_DB_URL"])


def store(session: McpSession, agent: str, content: str, **extra: object) -> None:
    assert session.call("store", {"agent_id": agent, "message": {"content": content}, **extra})["ok"]


def test_annotations_are_truthful(port_session: tuple[McpSession, Path]) -> None:
    session, _ = port_session
    tools = {t.name: t.annotations for t in session.list_tools().tools}
    assert (
        tools["export_memories"].read_only_hint is False
        and tools["export_memories"].destructive_hint is False
    )
    assert (
        tools["import_memories"].idempotent_hint is True and tools["import_memories"].read_only_hint is False
    )
    assert tools["merge_memories"].destructive_hint is True
    assert tools["migrate_channel_axis"].idempotent_hint is True


def test_export_import_round_trip_over_mcp(port_session: tuple[McpSession, Path]) -> None:
    session, exports = port_session
    agent, other, copy = next_agent(), next_agent(), next_agent()
    for i in range(5):
        store(session, agent, f"portable fact {i}", channel="c" if i % 2 else None)
    store(session, other, "not for export")
    assert session.call("archive_episode", {"agent_id": agent, "summary": "portable session"})["ok"]
    out = session.call("export_memories", {"agent_id": agent, "output_path": f"{agent}.jsonl"})
    assert out["counts"] == {"memories": 5, "episodes": 1, "profiles": 0}
    text = (exports / f"{agent}.jsonl").read_text()
    assert "not for export" not in text and json.loads(text.splitlines()[0])["format"] == "cpersona-export"
    again = session.call_raw("export_memories", {"agent_id": agent, "output_path": f"{agent}.jsonl"})
    assert again.is_error
    dry = session.call(
        "import_memories", {"input_path": f"{agent}.jsonl", "target_agent_id": copy, "dry_run": True}
    )
    assert dry["counts"]["memories"]["inserted"] == 5
    assert session.call("list_memories", {"agent_id": copy})["total"] == 0
    first = session.call("import_memories", {"input_path": f"{agent}.jsonl", "target_agent_id": copy})
    second = session.call("import_memories", {"input_path": f"{agent}.jsonl", "target_agent_id": copy})
    assert first["counts"]["memories"] == {"inserted": 5, "duplicates": 0}
    assert second["counts"]["memories"] == {"inserted": 0, "duplicates": 5}
    assert session.call("list_memories", {"agent_id": copy})["total"] == 5
    assert session.call("list_episodes", {"agent_id": copy})["total"] == 1


def test_bad_lines_over_mcp(port_session: tuple[McpSession, Path]) -> None:
    session, exports = port_session
    agent = next_agent()
    exports.mkdir(exist_ok=True)
    (exports / "bad.jsonl").write_text(
        "\n".join(
            [
                json.dumps({"type": "header", "format": "cpersona-export", "version": 1}),
                json.dumps({"type": "memory", "agent_id": agent, "content": "fine"}),
                "{garbage",
                json.dumps({"type": "memory", "agent_id": agent}),
            ]
        )
        + "\n"
    )
    result = session.call("import_memories", {"input_path": "bad.jsonl"})
    assert [e["line"] for e in result["errors"]] == [3, 4] and result["counts"]["memories"]["inserted"] == 1


@pytest.mark.parametrize("path", ["../outside.jsonl", "/etc/passwd", "link/x.jsonl"])
def test_paths_are_confined_over_mcp(port_session: tuple[McpSession, Path], path: str) -> None:
    session, exports = port_session
    exports.mkdir(exist_ok=True)
    if not (exports / "link").exists():
        os.symlink(exports.parent, exports / "link")
    for tool, args in (
        ("export_memories", {"agent_id": "a", "output_path": path}),
        ("import_memories", {"input_path": path}),
    ):
        response = session.call(tool, args)
        assert response["ok"] is False and response["error_code"] == "path_refused", response
    assert not (exports.parent / "outside.jsonl").exists() and not (exports.parent / "x.jsonl").exists()


def test_merge_and_migrate_over_mcp(port_session: tuple[McpSession, Path]) -> None:
    session, _ = port_session
    src, dst = next_agent(), next_agent()
    store(session, src, "shared line")
    store(session, src, "only in source", channel="bridge")
    store(session, dst, "shared line")
    same = session.call("merge_memories", {"source_agent_id": src, "target_agent_id": src})
    assert same["ok"] is False and same["error_code"] == "invalid_input"
    bad = session.call("merge_memories", {"source_agent_id": src, "target_agent_id": dst, "mode": "swap"})
    assert bad["ok"] is False and bad["error_code"] == "invalid_input"
    moved = session.call("merge_memories", {"source_agent_id": src, "target_agent_id": dst, "mode": "move"})
    assert moved["counts"]["memories"] == {"moved": 1, "skipped": 1}
    assert session.call("list_memories", {"agent_id": src})["total"] == 0
    dry = session.call("migrate_channel_axis", {"agent_id": dst})
    assert dry["dry_run"] is True and dry["unrecoverable"] == 1
    real = session.call(
        "migrate_channel_axis", {"agent_id": dst, "dry_run": False, "globalize_unrecoverable": True}
    )
    assert real["globalized"] == 1
    assert session.call("migrate_channel_axis", {"agent_id": dst, "dry_run": False})["scanned"] == 0
