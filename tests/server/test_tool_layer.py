"""The tool layer in-process over a real Memory: shaping with real rows, input hygiene, null handling."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from cpersona.core.limits import LIST_BUDGET_CHARS, RECALL_FULL_CONTENT_BUDGET_CHARS
from cpersona.server.dispatch import dispatch_tool


def snapshot(db_path: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return {
            t: conn.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in ("memories", "profiles")
        }
    finally:
        conn.close()


def big(i: int, size: int = 15_000) -> str:
    head = f"budgetword row {i:02d} "
    return (head + "lorem ipsum dolor " * (size // 18 + 1))[: size - 1] + "."


def test_full_content_budget_with_real_rows(tool_memory: Any) -> None:
    memory, cfg = tool_memory
    for i in range(15):
        assert dispatch_tool(memory, cfg, "store", {"agent_id": "fb", "message": {"content": big(i)}})["ok"]
    response = dispatch_tool(
        memory, cfg, "recall", {"agent_id": "fb", "query": "budgetword", "limit": 20, "full_content": True}
    )
    rows = response["results"]
    assert len(rows) == 15
    whole = [r for r in rows if "content_truncated" not in r]
    previewed = [r for r in rows if r.get("content_truncated")]
    assert sum(len(r["content"]) for r in whole) <= RECALL_FULL_CONTENT_BUDGET_CHARS
    assert len(whole) == 13 and len(previewed) == 2
    assert all("content_truncated" not in r for r in rows[-13:])  # the best end stays whole
    assert all(
        len(r["content"]) == cfg.recall_preview_chars and r["content_len"] == 15_000 for r in previewed
    )
    assert response["full_content_budget_exceeded"] is True
    assert response["full_content_budget_chars"] == RECALL_FULL_CONTENT_BUDGET_CHARS

    listed = dispatch_tool(memory, cfg, "list_memories", {"agent_id": "fb"})
    assert listed["content_budget_exceeded"] is True and listed["content_budget_chars"] == LIST_BUDGET_CHARS
    assert [("content_truncated" in r) for r in listed["items"]] == [False] * 6 + [True] * 9


def test_profile_rows_are_never_previewed(tool_memory: Any) -> None:
    memory, cfg = tool_memory
    for i in range(55):
        dispatch_tool(
            memory, cfg, "store", {"agent_id": "pf", "message": {"content": f"pool filler note {i}"}}
        )
    long_profile = "Profile sentence that is long. " * 60
    assert dispatch_tool(memory, cfg, "update_profile", {"agent_id": "pf", "profile": long_profile})["ok"]
    response = dispatch_tool(memory, cfg, "recall", {"agent_id": "pf", "query": "pool filler", "limit": 100})
    profiles = [r for r in response["results"] if r.get("type") == "profile"]
    assert profiles, "the scope holds >= 50 rows, so the profile is injected"
    assert profiles[0]["content"] == long_profile.strip()[: cfg.max_profile_length]
    assert "content_truncated" not in profiles[0]
    assert response["results"][0]["type"] == "profile"  # unscored, at the worst end


def test_exclude_contents_accepts_a_single_string(tool_memory: Any) -> None:
    memory, cfg = tool_memory
    kept = dispatch_tool(
        memory, cfg, "store", {"agent_id": "ex", "message": {"content": "keep this kiwi note"}}
    )
    dispatch_tool(memory, cfg, "store", {"agent_id": "ex", "message": {"content": "drop this kiwi note"}})
    response = dispatch_tool(
        memory, cfg, "recall", {"agent_id": "ex", "query": "kiwi note", "exclude_contents": "drop this"}
    )
    assert [r["id"] for r in response["results"]] == [kept["id"]]


def test_text_hygiene_and_timestamps(tool_memory: Any) -> None:
    memory, cfg = tool_memory
    stored = dispatch_tool(
        memory,
        cfg,
        "store",
        {
            "agent_id": "h",
            "message": {
                "content": "nul\x00 byte and lone \ud800 surrogate",
                "timestamp": "2026-01-31T09:30:00+09:00",
            },
        },
    )
    assert stored["result"] == "stored", stored
    naive = dispatch_tool(
        memory,
        cfg,
        "store",
        {
            "agent_id": "h",
            "message": {"content": "naive time", "timestamp": "2026-01-31T09:30:00"},
        },
    )
    assert naive["result"] == "stored"
    rows = {r["id"]: r for r in dispatch_tool(memory, cfg, "list_memories", {"agent_id": "h"})["items"]}
    assert rows[stored["id"]]["content"] == "nul byte and lone \ufffd surrogate"
    assert rows[stored["id"]]["timestamp"].startswith("2026-01-31T00:30:00")
    assert rows[naive["id"]]["timestamp"].startswith("2026-01-31T09:30:00")

    before = snapshot(cfg.db_path)
    for bad in ('{"a": ', "[1, 2]", "not json"):
        rejected = dispatch_tool(
            memory, cfg, "store", {"agent_id": "h", "message": {"content": "m", "metadata": bad}}
        )
        assert (
            rejected["ok"] is False and rejected["result"] == "rejected" and "metadata" in rejected["error"]
        )
    assert snapshot(cfg.db_path) == before


def test_null_optional_arguments_count_as_omitted(tool_memory: Any) -> None:
    memory, cfg = tool_memory
    stored = dispatch_tool(
        memory,
        cfg,
        "store",
        {
            "agent_id": "n",
            "message": {"content": "null scope"},
            "channel": None,
            "project_id": None,
        },
    )
    assert stored["result"] == "stored", stored
    recalled = dispatch_tool(memory, cfg, "recall", {"agent_id": "n", "query": "null scope", "limit": None})
    assert recalled["ok"] is True and recalled["results"][-1]["id"] == stored["id"]
    missing = dispatch_tool(memory, cfg, "recall", {"agent_id": None, "query": "x"})
    assert missing["ok"] is False and "agent_id" in missing["error"]
