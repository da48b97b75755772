"""Supersede with history (issue 22 point 2): store / update_memory link, recall hides, get_history shows."""

from __future__ import annotations

import contextlib
import dataclasses
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pg_cluster import BOTH_ENGINES

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.errors import CPersonaError, InvalidInput, LockedRow, NotFound, SupersedeRefused
from cpersona.memory import Memory

pytestmark = BOTH_ENGINES


def _refs(result: dict[str, Any], key: str = "results") -> list[str]:
    return [r["ref"] for r in result[key]]


def _code(call: Any) -> str:
    with pytest.raises(CPersonaError) as caught:
        call()
    return caught.value.code


def test_store_supersedes_hides_old_from_recall_and_history_shows_both(memory: Memory) -> None:
    old = memory.store("a", "The team database is PostgreSQL, decided on Monday")
    new = memory.store(
        "a", "The team database is SQLite now, PostgreSQL was dropped", supersedes=[old["ref"]]
    )
    assert new["result"] == "stored" and new["supersedes"] == [old["ref"]]

    recalled = memory.recall("a", "team database", limit=10)
    assert _refs(recalled) == [new["ref"]]
    listing = memory.recall("a", "", limit=10)  # the empty-query path (newest first) hides it too
    assert _refs(listing) == [new["ref"]]

    everything = memory.recall("a", "team database", limit=10, include_superseded=True)
    rows = {r["ref"]: r for r in everything["results"]}
    assert set(rows) == {old["ref"], new["ref"]}
    assert rows[old["ref"]]["superseded_by"] == new["ref"] and rows[old["ref"]]["superseded_at"]
    assert "superseded_by" not in rows[new["ref"]]

    for ref in (old["ref"], new["ref"]):
        history = memory.get_history(ref, agent_id="a")
        assert history["current"] == new["ref"] and history["count"] == 2
        assert _refs(history, "history") == [old["ref"], new["ref"]]
        assert history["history"][0]["superseded_by"] == new["ref"]
        assert "superseded_by" not in history["history"][1]
    fetched = memory.get_contents("a", [old["ref"], new["ref"]])["items"]
    assert fetched[0]["content"].startswith("The team database is Postgre")
    assert fetched[0]["superseded_by"] == new["ref"] and "superseded_by" not in fetched[1]


def test_a_chain_of_three_and_update_memory_links_after_the_fact(memory: Memory) -> None:
    one = memory.store("a", "meeting room is Alpha")
    two = memory.store("a", "meeting room is Beta", supersedes=[one["id"]])
    three = memory.store("a", "meeting room is Gamma")
    linked = memory.update_memory(three["ref"], agent_id="a", supersedes=[two["ref"]])
    assert linked["supersedes"] == [two["ref"]]
    assert memory.get_contents("a", [three["ref"]])["items"][0]["content"] == "meeting room is Gamma"
    history = memory.get_history(one["ref"])
    assert _refs(history, "history") == [one["ref"], two["ref"], three["ref"]]
    assert [h.get("superseded_by") for h in history["history"]] == [two["ref"], three["ref"], None]
    assert _refs(memory.recall("a", "meeting room", limit=10)) == [three["ref"]]
    # Re-running the same link is a no-op, not a refusal.
    assert memory.update_memory(three["ref"], supersedes=[two["ref"]])["ok"] is True


def test_refusals_write_nothing(memory: Memory) -> None:
    old = memory.store("a", "the launch is on Friday")
    other = memory.store("b", "agent b keeps its own launch date")
    locked = memory.store("a", "the budget is fixed")
    memory.lock_memory(locked["ref"])

    assert _code(lambda: memory.store("a", "new launch date", supersedes=["mem:999999"])) == "not_found"
    assert _code(lambda: memory.store("a", "new launch date", supersedes=[other["ref"]])) == "not_found"
    assert _code(lambda: memory.store("a", "new budget", supersedes=[locked["ref"]])) == "locked"
    assert _code(lambda: memory.store("a", "new launch date", supersedes=["ep:3"])) == "invalid_input"
    assert _code(lambda: memory.store("a", "new launch date", supersedes="mem:1")) == "invalid_input"  # type: ignore[arg-type]
    assert _code(lambda: memory.update_memory(old["ref"], supersedes=[old["ref"]])) == "supersede_refused"
    # Nothing was stored by any refused call, and nothing is marked.
    assert memory.list_memories("a")["total"] == 2
    assert memory.get_history(old["ref"])["count"] == 1

    newer = memory.store("a", "the launch moved to Monday", supersedes=[old["ref"]])
    # Already superseded: refused, naming the current one.
    with pytest.raises(SupersedeRefused, match=newer["ref"]):
        memory.store("a", "the launch moved to Tuesday", supersedes=[old["ref"]])
    # A cycle: the old row cannot supersede its successor.
    assert _code(lambda: memory.update_memory(old["ref"], supersedes=[newer["ref"]])) == "supersede_refused"
    # update_memory without content and without supersedes is still an error.
    with pytest.raises(InvalidInput):
        memory.update_memory(newer["ref"])
    # One bad ref in a list refuses the whole call.
    third = memory.store("a", "release notes are drafted")
    with pytest.raises(LockedRow):
        memory.store("a", "release notes and budget", supersedes=[third["ref"], locked["ref"]])
    assert memory.get_history(third["ref"])["count"] == 1
    with pytest.raises(NotFound):
        memory.get_history(old["ref"], agent_id="b")
    with pytest.raises(NotFound):
        memory.get_history(old["ref"], allowed_agents=["b"])


def test_deleting_the_newer_row_splices_the_chain(memory: Memory) -> None:
    one = memory.store("a", "office is in Berlin")
    two = memory.store("a", "office is in Paris", supersedes=[one["ref"]])
    three = memory.store("a", "office is in Rome", supersedes=[two["ref"]])
    memory.delete_memory(two["ref"])
    history = memory.get_history(one["ref"])
    assert _refs(history, "history") == [one["ref"], three["ref"]]
    assert history["history"][0]["superseded_by"] == three["ref"]
    memory.delete_memory(three["ref"])
    # The head went: the older fact is current again and recall finds it.
    assert memory.get_history(one["ref"])["count"] == 1
    assert _refs(memory.recall("a", "office", limit=10)) == [one["ref"]]


def test_delete_agent_data_takes_the_chain(memory: Memory) -> None:
    one = memory.store("a", "the plan is A")
    memory.store("a", "the plan is B", supersedes=[one["ref"]])
    memory.store("b", "the plan of b")
    memory.delete_agent_data("a")
    assert memory.list_memories("a")["total"] == 0
    assert memory.recall("b", "plan", limit=10)["count"] == 1


def test_superseded_rows_leave_the_candidate_pool_not_only_the_answer(memory: Memory) -> None:
    # Many superseded rows match the query better than the current one; with limit 1 the current
    # one must still come back (a filter after the top-k would return nothing).
    head = memory.store(
        "a", "the espresso machine on the second floor makes the coffee now, ask facilities about it"
    )
    for n in range(40):
        memory.store("a", f"coffee coffee coffee {n}")
    olders = [r["id"] for r in memory.list_memories("a", limit=50)["items"] if r["id"] != head["id"]]
    memory.update_memory(head["ref"], supersedes=olders)
    recalled = memory.recall("a", "coffee coffee coffee", limit=1)
    assert _refs(recalled) == [head["ref"]]
    assert memory.recall("a", "coffee", limit=50)["count"] == 1


def _fresh(settings: Settings, new_db_url: Callable[[], str | None], name: str, exports: Path) -> Memory:
    other = dataclasses.replace(
        settings,
        db_path=settings.db_path.parent / name / "memory.db",
        db_url=new_db_url(),
        export_dir=exports,
    )
    mem = Memory(other, backend=NoEmbeddings())
    mem.wait_until_ready(5)
    return mem


def test_export_import_keeps_the_chain_with_ids_remapped(
    memory: Memory, settings: Settings, new_db_url: Callable[[], str | None], tmp_path: Path
) -> None:
    one = memory.store("a", "we deploy on Fridays")
    two = memory.store("a", "we deploy on Tuesdays", supersedes=[one["ref"]])
    three = memory.store("a", "we deploy every day")
    memory.update_memory(three["ref"], supersedes=[two["ref"]])
    memory.store("a", "unrelated fact about lunch")
    memory.store("b", "agent b is not exported")
    out = memory.export_memories("a", "a.jsonl")
    assert out["counts"] == {"memories": 4, "episodes": 0, "profiles": 0, "supersede_links": 2}

    with _fresh(settings, new_db_url, "dst", Path(out["path"]).parent) as dst:
        for n in range(5):  # the new ids differ from the exported ones
            dst.store("z", f"filler {n}")
        first = dst.import_memories("a.jsonl")
        assert first["error_count"] == 0
        assert first["counts"]["supersede_links"] == {"read": 2, "linked": 2, "skipped": 0}
        current = dst.recall("a", "deploy", limit=10)
        assert [r["content"] for r in current["results"]] == ["we deploy every day"]
        head = current["results"][0]["ref"]
        assert head != three["ref"]
        history = dst.get_history(head)
        assert [h["content"] for h in history["history"]] == [
            "we deploy on Fridays",
            "we deploy on Tuesdays",
            "we deploy every day",
        ]
        assert history["history"][1]["superseded_by"] == head
        again = dst.import_memories("a.jsonl")
        assert again["counts"]["supersede_links"] == {"read": 2, "linked": 0, "skipped": 2}
        assert dst.get_history(head)["count"] == 3
        carol = dst.import_memories("a.jsonl", target_agent_id="carol")
        assert carol["counts"]["supersede_links"]["linked"] == 2
        assert [r["content"] for r in dst.recall("carol", "deploy", limit=10)["results"]] == [
            "we deploy every day"
        ]


def test_check_health_notices_a_dangling_link(memory: Memory, settings: Settings) -> None:
    old = memory.store("a", "the old rule")
    new = memory.store("a", "the new rule", supersedes=[old["ref"]])
    clean = memory.check_health(checks=["schema"])
    assert not [
        f for f in clean["findings"] if "superseded by a memory that no longer exists" in f["message"]
    ]
    # Without the splice trigger (a damaged schema) deleting the newer row leaves the mark dangling.
    if settings.db_url:
        with psycopg.connect(settings.db_url, autocommit=True) as conn:
            conn.execute("DROP TRIGGER memories_supersede_splice ON memories")
    else:
        with contextlib.closing(sqlite3.connect(settings.db_path)) as conn:
            conn.execute("DROP TRIGGER memories_supersede_splice")
            conn.commit()
    memory.delete_memory(new["ref"])
    report = memory.check_health(checks=["schema"])
    dangling = [
        f for f in report["findings"] if "superseded by a memory that no longer exists" in f["message"]
    ]
    assert dangling and dangling[0]["refs"] == [old["ref"]]


@pytest.mark.parametrize("mode", ["copy", "move"])
def test_merge_carries_the_chain(memory: Memory, mode: str) -> None:
    one = memory.store("a", "lunch is at noon")
    two = memory.store("a", "lunch is at one", supersedes=[one["ref"]])
    memory.store("b", "lunch is at noon")  # the target already holds the first version
    merged = memory.merge_memories("a", "b", mode=mode)
    assert merged["ok"]
    current = memory.recall("b", "lunch", limit=10)
    assert [r["content"] for r in current["results"]] == ["lunch is at one"]
    history = memory.get_history(current["results"][0]["ref"], agent_id="b")
    assert [h["content"] for h in history["history"]] == ["lunch is at noon", "lunch is at one"]
    if mode == "copy":  # the source keeps its own chain
        assert _refs(memory.get_history(one["ref"], agent_id="a"), "history") == [one["ref"], two["ref"]]
