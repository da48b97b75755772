"""The tool registry against SPEC §5's list of 30 tools (issue 7 item 8)."""

from __future__ import annotations

from cpersona.server.schemas import tool_names

SPEC_TOOLS = {
    # everyday memory
    "store", "recall", "recall_with_context", "get_contents", "archive_episode", "update_memory",
    # profile and operator context
    "get_profile", "update_profile", "get_operating_context",
    # browsing
    "list_memories", "list_episodes", "get_queue_status",
    # protection and deletion
    "lock_memory", "unlock_memory", "delete_memory", "delete_episode", "delete_agent_data",
    # retrieval quality
    "calibrate_threshold", "set_recall_precision", "get_recall_precision",
    # portability
    "export_memories", "import_memories", "merge_memories", "migrate_channel_axis",
    # health and maintenance
    "check_health", "deep_check",
    # session controls
    "pause_persistence", "resume_persistence", "persistence_status",
    # updates
    "check_update",
}
#: Built on the quality-gate branch; once merged, the registry must equal SPEC_TOOLS exactly.
QUALITY_GATE_TOOLS = {"calibrate_threshold", "set_recall_precision", "get_recall_precision"}


def test_the_spec_names_thirty_tools() -> None:
    assert len(SPEC_TOOLS) == 30


def test_every_registered_tool_is_a_spec_tool_and_only_the_quality_tools_may_be_pending() -> None:
    names = set(tool_names())
    assert names <= SPEC_TOOLS, sorted(names - SPEC_TOOLS)
    assert SPEC_TOOLS - names <= QUALITY_GATE_TOOLS, sorted(SPEC_TOOLS - names - QUALITY_GATE_TOOLS)
    assert len(tool_names()) == len(names)  # no name twice

