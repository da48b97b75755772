"""Every tool's real answer over stdio validates against the outputSchema it advertises.

``McpSession.call`` checks each answer against the listed ``outputSchema`` (and fails when
a tool lists none); this module makes sure every tool (the spec's 30 and issue 22's) are called at least once, on one
fresh server per storage engine, each with arguments that succeed, and once each with arguments that fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_helpers import ALL_TOOL_NAMES, mcp_session, server_env, stdio_target
from pg_cluster import ENGINES, PG_VECTOR_INDEX

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("engine_name", ENGINES)
def test_every_tool_answers_what_its_output_schema_says(
    tmp_path: Path, engine_name: str, request: pytest.FixtureRequest
) -> None:
    agent = "contract"
    extra: dict[str, str] = {}
    if engine_name == "postgres":
        cluster = request.getfixturevalue("pg_cluster")
        extra = {"CPERSONA_DB_URL": cluster.create(), "CPERSONA_PG_VECTOR_INDEX": PG_VECTOR_INDEX}
    with mcp_session(stdio_target(server_env(tmp_path, **extra))) as session:
        listed = {tool.name: tool for tool in session.list_tools().tools}
        assert all(listed[name].output_schema for name in ALL_TOOL_NAMES)
        stored = session.call(
            "store", {"agent_id": agent, "message": {"content": "Kestrel deploys on Fridays"}}
        )
        other = session.call(
            "store", {"agent_id": agent, "message": {"content": "Vault key rotates monthly"}}
        )
        episode = session.call("archive_episode", {"agent_id": agent, "summary": "Deploy planning session"})
        linked = session.call(
            "store",
            {
                "agent_id": agent,
                "message": {"content": "Friday deploys were decided at the kickoff"},
                "associations": [
                    {"relation": "about", "entity": "Kestrel"},
                    {"relation": "cites", "to": stored["ref"]},
                ],
            },
        )
        assert [a["result"] for a in linked["associations"]] == ["declared", "declared"]
        calls: list[tuple[str, dict]] = [
            ("store", {"agent_id": agent, "message": {"content": "Kestrel deploys on Fridays"}}),  # skipped
            ("recall", {"agent_id": agent, "query": "kestrel deploy", "trace": True}),
            ("recall_with_context", {"agent_id": agent, "query": "deploy", "external_context": []}),
            ("get_contents", {"agent_id": agent, "refs": [stored["ref"], episode["ref"], "mem:999999"]}),
            (
                "store",
                {
                    "agent_id": agent,
                    "message": {"content": "Kestrel deploys on Mondays"},
                    "supersedes": [stored["ref"]],
                },
            ),
            ("recall", {"agent_id": agent, "query": "kestrel deploy", "include_superseded": True}),
            ("get_history", {"memory_id": stored["ref"], "agent_id": agent}),
            (
                "update_memory",
                {"memory_id": other["id"], "content": "Vault key rotates weekly", "agent_id": agent},
            ),
            ("update_profile", {"agent_id": agent, "profile": "Prefers short answers"}),
            ("get_profile", {"agent_id": agent}),
            ("get_operating_context", {}),
            ("list_memories", {"agent_id": agent}),
            ("list_episodes", {"agent_id": agent}),
            ("get_queue_status", {}),
            (
                "declare_associations",
                {
                    "agent_id": agent,
                    "from": other["ref"],
                    "associations": [{"relation": "see_also", "to": linked["ref"]}],
                },
            ),
            ("traverse", {"agent_id": agent, "from": "Kestrel", "depth": 3}),
            ("reconstruct", {"agent_id": agent, "query": "kestrel deploy", "refs": [stored["ref"]]}),
            ("lock_memory", {"memory_id": stored["ref"], "agent_id": agent}),
            ("unlock_memory", {"memory_id": stored["id"], "agent_id": agent}),
            ("retire_memory", {"memory_id": other["ref"], "agent_id": agent, "reason": "kept for the test"}),
            ("unretire_memory", {"memory_id": other["ref"], "agent_id": agent}),
            ("calibrate_threshold", {"agent_id": agent}),
            ("set_recall_precision", {"agent_id": agent, "precision": "strict"}),
            ("get_recall_precision", {"agent_id": agent}),
            ("export_memories", {"agent_id": agent, "output_path": "export.jsonl"}),
            ("import_memories", {"input_path": "export.jsonl", "target_agent_id": "copy", "dry_run": True}),
            ("merge_memories", {"source_agent_id": agent, "target_agent_id": "merged"}),
            ("migrate_channel_axis", {"agent_id": agent}),
            ("check_health", {"agent_id": agent}),
            ("deep_check", {"agent_id": agent}),
            ("pause_persistence", {"ttl_seconds": 60}),
            ("persistence_status", {}),
            ("resume_persistence", {}),
            ("check_update", {}),
            ("delete_memory", {"memory_id": other["id"], "agent_id": agent}),
            ("delete_episode", {"episode_id": episode["id"], "agent_id": agent}),
            ("delete_agent_data", {"agent_id": "merged"}),
        ]
        answers = {name: session.call(name, arguments) for name, arguments in calls}
        called = {"store", "archive_episode", *answers}
        assert called == set(ALL_TOOL_NAMES)
        # Keyword-only mode (no model in this test) has no cosines to calibrate on: a failure it is.
        assert answers.pop("calibrate_threshold")["error_code"] == "calibration_unavailable"
        assert {row["ref"] for row in answers["traverse"]["results"]} == {
            linked["ref"],
            stored["ref"],
            other["ref"],
        }
        roles = {item["role"] for item in answers["reconstruct"]["items"]}
        assert {"match", "given"} <= roles, answers["reconstruct"]
        failed = {name: answer for name, answer in answers.items() if answer["ok"] is not True}
        assert failed == {}, {name: answer["error"][:100] for name, answer in failed.items()}
        for name in ALL_TOOL_NAMES:  # and each one's failure validates too
            refused = session.call(name, {"no_such_argument": 1})
            assert refused["ok"] is False and refused["error_code"] == "invalid_input", (name, refused)
    if extra:
        cluster.drop(extra["CPERSONA_DB_URL"])
