"""Issue 9 defects 2, 3 and 8: values that used to escape as `internal` errors or be silently altered.

Each case runs through a real server process over stdio AND over streamable HTTP with a real MCP
client, and through the plain Python API, because the contract is the same on every path.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import McpSession, transport_session, unique

from cpersona.config import Settings
from cpersona.core.limits import MAX_JSON_DEPTH
from cpersona.errors import InvalidInput, Rejected
from cpersona.memory import Memory

pytestmark = pytest.mark.slow

next_agent = unique("bad")


@pytest.fixture(scope="module", params=["stdio", "http"])
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpSession]:
    """One real server per transport for the module; tests use distinct agent ids."""
    with transport_session(request.param, tmp_path_factory.mktemp(request.param)) as opened:
        yield opened


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    settings = Settings(
        db_path=tmp_path / "memory.db",
        models_dir=tmp_path / "models",
        embedding_mode="none",
        update_check=False,
        auto_fetch_model=False,
        operating_context_path=tmp_path / "ctx.toml",
    )
    with Memory(settings) as opened:
        yield opened


def refused(response: dict[str, Any], code: str) -> None:
    assert response["ok"] is False, response
    assert response["error_code"] == code, response
    assert "Error" not in response["error"] and "Traceback" not in response["error"], response


# -- defect 2: a ref id past SQLite's integer range ----------------------------------------------------
HUGE_REFS = ["mem:99999999999999999999999", "ep:9223372036854775808", "mem:" + "9" * 60]


def test_huge_ref_ids_are_missing_not_internal(session: McpSession) -> None:
    agent = next_agent()
    stored = session.call("store", {"agent_id": agent, "message": {"content": "a real row beside huge refs"}})
    response = session.call("get_contents", {"agent_id": agent, "refs": [*HUGE_REFS, stored["ref"]]})
    assert response["ok"] is True, response
    assert response["missing"] == HUGE_REFS
    assert [item["id"] for item in response["items"]] == [stored["id"]]


def test_huge_ref_ids_in_the_api(memory: Memory) -> None:
    result = memory.get_contents("a", HUGE_REFS)
    assert result == {"ok": True, "items": [], "missing": HUGE_REFS}
    with pytest.raises(InvalidInput):
        memory.get_contents("a", ["mem:²"])  # a Unicode digit is not an id (int() would refuse it)
    with pytest.raises(InvalidInput):
        memory.update_memory("mem:" + "9" * 5000, content="x")  # past int()'s digit limit


# -- defect 3: metadata nested too deep ---------------------------------------------------------------
def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


def test_deep_metadata_string_is_rejected(session: McpSession) -> None:
    agent = next_agent()
    deep_text = '{"a":' * 5000 + "1" + "}" * 5000
    response = session.call(
        "store", {"agent_id": agent, "message": {"content": "deep", "metadata": deep_text}}
    )
    refused(response, "rejected")
    assert f"deeper than {MAX_JSON_DEPTH}" in response["error"]
    ok = session.call(
        "store",
        {"agent_id": agent, "message": {"content": "deep enough", "metadata": nested(MAX_JSON_DEPTH)}},
    )
    assert ok["result"] == "stored", ok
    over = session.call(
        "store",
        {"agent_id": agent, "message": {"content": "too deep", "metadata": nested(MAX_JSON_DEPTH + 1)}},
    )
    refused(over, "rejected")
    assert session.call("list_memories", {"agent_id": agent})["total"] == 1


def test_deep_metadata_in_the_api(memory: Memory) -> None:
    for deep in (nested(5000), '{"a":' * 5000 + "1" + "}" * 5000, json.dumps(nested(MAX_JSON_DEPTH + 1))):
        with pytest.raises(Rejected, match=f"deeper than {MAX_JSON_DEPTH}"):
            memory.store("a", "deep", metadata=deep)
    deep_list: Any = [1]
    for _ in range(5000):
        deep_list = [deep_list]
    with pytest.raises(Rejected, match="deeper"):
        memory.store("a", "deep list", source={"x": deep_list})
    assert memory.store("a", "fine", metadata=nested(MAX_JSON_DEPTH))["result"] == "stored"


# -- defect 8: NUL bytes in identifiers; the archive_episode history error -------------------------------
@pytest.mark.parametrize("field", ["agent_id", "project_id", "channel"])
def test_nul_in_identifiers_is_refused(session: McpSession, field: str) -> None:
    agent = next_agent()
    args: dict[str, Any] = {"agent_id": agent, "message": {"content": f"nul in {field}"}}
    args[field] = args.get(field, "ag") + "\x00nt" if field != "agent_id" else agent + "\x00x"
    refused(session.call("store", args), "rejected")
    assert "NUL" in session.call("store", args)["error"]
    refused(session.call("recall", {"agent_id": agent + "\x00", "query": "nul"}), "invalid_input")
    assert session.call("list_memories", {"agent_id": agent})["total"] == 0


def test_nul_in_identifiers_in_the_api(memory: Memory) -> None:
    memory.store("agnt", "the real agent's row")
    with pytest.raises(Rejected, match="NUL"):
        memory.store("ag\x00nt", "would have joined agnt")
    with pytest.raises(InvalidInput, match="NUL"):
        memory.list_memories("ag\x00nt")
    # Free text still just loses its NUL bytes (docs/input-rules.md).
    assert memory.recall("agnt", "real\x00 agent")["ok"] is True
    assert memory.list_memories("agnt")["total"] == 1


def test_archive_episode_names_history(session: McpSession) -> None:
    response = session.call(
        "archive_episode",
        {"agent_id": next_agent(), "summary": "s", "history": [{"role": "", "content": "x"}]},
    )
    assert response["ok"] is False and response["error_code"] == "invalid_input", response
    assert "history[0]" in response["error"] and "external_context" not in response["error"]
