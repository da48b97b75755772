"""check_health / deep_check through a real MCP client over stdio, on a database (a SQLite file, a PostgreSQL
database) damaged behind the server's back."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from health_damage import CAP, Target, damage_file, damage_rows, is_postgres, row, seed
from mcp_helpers import McpSession, mcp_session, server_env, stdio_target
from pg_cluster import ENGINES, PG_VECTOR_INDEX, PgCluster

from cpersona.health.checks import check_names
from cpersona.health.deep_checks import deep_check_names


@pytest.fixture(scope="module", params=ENGINES)
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[McpSession, Target]]:
    tmp = tmp_path_factory.mktemp("health-stdio")
    target: Target = tmp / "memory.db"
    extra: dict[str, str] = {}
    cluster: PgCluster | None = None
    if request.param == "postgres":
        cluster = request.getfixturevalue("pg_cluster")
        target = cluster.create()
        extra = {"CPERSONA_DB_URL": target, "CPERSONA_PG_VECTOR_INDEX": PG_VECTOR_INDEX}
    env = server_env(tmp, CPERSONA_MAX_CONTENT_LENGTH=str(CAP), **extra)
    with mcp_session(stdio_target(env)) as session:
        assert session.call("store", {"agent_id": "warmup", "message": {"content": "creates the file"}})["ok"]
        yield session, target
    if cluster is not None:
        cluster.drop(str(target))


def warn_checks(result: dict[str, Any]) -> set[str]:
    return {f["check"] for f in result["findings"] if f["severity"] != "info"}


def test_tools_are_listed_with_truthful_annotations(served: tuple[McpSession, Target]) -> None:
    session, _ = served
    tools = {t.name: t for t in session.list_tools().tools}
    health, deep = tools["check_health"], tools["deep_check"]
    assert health.annotations.read_only_hint is False and health.annotations.destructive_hint is True
    assert health.annotations.idempotent_hint is True
    assert deep.annotations.read_only_hint is True and deep.annotations.destructive_hint is False
    assert health.input_schema["properties"]["checks"]["items"]["enum"] == check_names()
    assert deep.input_schema["required"] == ["agent_id"]


def test_damage_found_fixed_and_clean_over_mcp(served: tuple[McpSession, Target]) -> None:
    session, path = served
    seed(path, "mcp-victim")
    rows = damage_rows(path, "mcp-victim")
    damage_file(path, "mcp-victim")
    locked = damage_rows(path, "mcp-locked", locked=True)

    report = session.call("check_health", {})
    assert report["ok"] is True and report["status"] == "unhealthy"
    damaged = {"schema", "duplicates", "oversized", "invalid_json", "timestamps", "tasks"}
    assert warn_checks(report) >= damaged | (set() if is_postgres(path) else {"fts"})

    fixed = session.call("check_health", {"fix": True})
    assert fixed["repairs"]["schema"]["remaining"] == 0
    assert row(path, rows["bad_json"])["metadata"] == '{"invalid_json": "{not json"}'
    assert len(row(path, rows["oversized"])["content"]) == CAP
    assert row(path, locked["bad_json"])["metadata"] == "{not json"

    victim = session.call("check_health", {"agent_id": "mcp-victim"})
    assert victim["status"] == "healthy", victim["findings"]
    leftover = session.call("check_health", {"agent_id": "mcp-locked"})
    assert leftover["status"] == "degraded"
    assert warn_checks(leftover) == {"oversized", "invalid_json", "timestamps"}
    whole = session.call("check_health", {})
    assert whole["status"] == "degraded" and warn_checks(whole) == {"oversized", "invalid_json", "timestamps"}


def test_unknown_check_name_fails_naming_the_valid_ones(served: tuple[McpSession, Target]) -> None:
    session, _ = served
    result = session.call("check_health", {"checks": ["fts", "bogus"]})
    assert result["ok"] is False and result["error_code"] == "invalid_input"
    assert "bogus" in result["error"] and "vector_window" in result["error"]
    deep = session.call("deep_check", {"agent_id": "x", "checks": ["bogus"]})
    assert deep["ok"] is False and "near_duplicates" in deep["error"]


def test_deep_check_reports_over_mcp(served: tuple[McpSession, Target]) -> None:
    session, _ = served
    session.call("store", {"agent_id": "deep", "message": {"content": "ok"}})
    session.call(
        "store",
        {
            "agent_id": "deep",
            "message": {
                "content": "a longer memory with a named source",
                "source": {"type": "user", "id": "u1", "name": "Ann"},
            },
        },
    )
    result = session.call("deep_check", {"agent_id": "deep", "fix": True})
    assert result["ok"] is True and result["checks_run"] == deep_check_names() and result["fixed"] == 0
    by = {f["check"]: f for f in result["findings"]}
    assert by["short_content"]["count"] == 1 and by["anonymous_sources"]["count"] == 1
    assert session.call("deep_check", {})["ok"] is False  # agent_id is required


def test_deep_check_is_listed_from_its_methods_declaration(served: tuple[McpSession, Target]) -> None:
    # Declared on Maintenance.deep_check (@public(tool=...)): arguments, hints and title reach tools/list.
    session, _ = served
    listed = {tool.name: tool for tool in session.list_tools().tools}["deep_check"]
    assert listed.title == "Semantic review of an agent's memories"
    assert listed.annotations is not None and listed.annotations.read_only_hint is True
    assert listed.annotations.destructive_hint is False and listed.annotations.idempotent_hint is True
    schema = listed.input_schema
    assert schema["required"] == ["agent_id"] and schema["additionalProperties"] is False
    assert schema["properties"]["checks"]["items"]["enum"] == deep_check_names()
    assert schema["properties"]["fix"] == {
        "type": "boolean",
        "description": "Accepted; deep checks change nothing.",
        "default": False,
    }
