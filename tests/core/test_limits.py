"""The contract limits in cpersona.core.limits are the numbers both the tool schemas and the Python API apply."""

from __future__ import annotations

import pytest

from cpersona.config import Settings
from cpersona.core import limits
from cpersona.errors import InvalidInput
from cpersona.memory import Memory
from cpersona.server.app import instructions
from cpersona.server.tools import TOOLS_BY_NAME, build_tools


def props(tool: str) -> dict:
    return TOOLS_BY_NAME[tool].input_schema["properties"]


def test_schemas_spell_the_limits_module_numbers() -> None:
    recall_limit = props("recall")["limit"]
    assert recall_limit["maximum"] == limits.RECALL_LIMIT_MAX
    assert recall_limit["default"] == limits.RECALL_LIMIT_DEFAULT
    assert props("recall_with_context")["limit"]["maximum"] == limits.RECALL_LIMIT_MAX
    assert props("get_contents")["refs"]["maxItems"] == limits.MAX_REFS_PER_CALL
    assert props("list_memories")["limit"]["maximum"] == limits.LIST_LIMIT_MAX
    assert props("list_memories")["limit"]["default"] == limits.LIST_MEMORIES_LIMIT_DEFAULT
    assert props("list_episodes")["limit"]["maximum"] == limits.LIST_LIMIT_MAX
    assert props("list_episodes")["limit"]["default"] == limits.LIST_EPISODES_LIMIT_DEFAULT
    for tool, arg in (("update_memory", "memory_id"), ("delete_episode", "episode_id")):
        as_integer, as_ref = props(tool)[arg]["anyOf"]  # an id is an integer or a ref string
        assert as_integer["maximum"] == limits.MAX_ROW_ID
        assert str(limits.MAX_ROW_ID_DIGITS - 1) in as_ref["pattern"]


def test_the_api_refuses_one_past_each_schema_limit(memory: Memory) -> None:
    memory.recall("a", "x", limit=limits.RECALL_LIMIT_MAX)
    with pytest.raises(InvalidInput):
        memory.recall("a", "x", limit=limits.RECALL_LIMIT_MAX + 1)
    memory.list_memories("a", limit=limits.LIST_LIMIT_MAX)
    with pytest.raises(InvalidInput):
        memory.list_memories("a", limit=limits.LIST_LIMIT_MAX + 1)
    with pytest.raises(InvalidInput):
        memory.list_episodes("a", limit=limits.LIST_LIMIT_MAX + 1)
    assert memory.get_contents("a", ["mem:1"] * limits.MAX_REFS_PER_CALL)["missing"]
    with pytest.raises(InvalidInput):
        memory.get_contents("a", ["mem:1"] * (limits.MAX_REFS_PER_CALL + 1))
    with pytest.raises(InvalidInput):
        memory.delete_memory(limits.MAX_ROW_ID + 1, agent_id="a")
    entries = [{"role": "user", "content": "hi"}] * (limits.MAX_CONTEXT_ENTRIES + 1)
    with pytest.raises(InvalidInput):
        memory.recall_with_context("a", "x", entries)


def test_descriptions_follow_the_settings_not_the_defaults() -> None:
    settings = Settings(recall_preview_chars=1234, max_profile_length=4321)
    tools = {spec.name: spec for spec in build_tools(settings)}
    assert "1,234 characters" in tools["recall"].description
    assert "1,234-character" in tools["recall"].input_schema["properties"]["full_content"]["description"]
    assert "4,321 characters" in tools["update_profile"].description
    assert "1,234-character" in instructions(settings)
    everything = instructions(settings) + "".join(
        spec.description + str(spec.input_schema) for spec in tools.values()
    )
    assert "500" not in everything and "2,000" not in everything
