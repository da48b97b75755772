"""The process-wide persistence switch: TTL, expiry, thread safety, and what every write does while paused."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cpersona.config import Settings
from cpersona.errors import InvalidInput, PersistencePaused, Rejected
from cpersona.memory import Memory
from cpersona.runtime import persistence
from cpersona.runtime.persistence import MAX_TTL_SECONDS, PersistenceSwitch
from cpersona.server.dispatch import dispatch_tool


class FakeClock:
    """Monotonic and wall clocks that only move when told to."""

    def __init__(self) -> None:
        self.mono = 1000.0
        self.wall = 1_700_000_000.0

    def advance(self, seconds: float) -> None:
        self.mono += seconds
        self.wall += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def switch(clock: FakeClock) -> PersistenceSwitch:
    return PersistenceSwitch(clock=lambda: clock.mono, wall=lambda: clock.wall)


def test_not_paused_by_default(switch: PersistenceSwitch) -> None:
    assert switch.status() == {
        "ok": True,
        "paused": False,
        "remaining_seconds": 0,
        "since": None,
        "until": None,
        "ttl_seconds": None,
    }
    switch.check_writable("store")  # does not raise
    assert switch.effective_fix(True) == (True, None)
    assert switch.effective_dry_run(False) == (False, None)


def test_pause_reports_its_window_and_expires_by_itself(switch: PersistenceSwitch, clock: FakeClock) -> None:
    paused = switch.pause(60)
    assert paused["paused"] is True and paused["was_paused"] is False
    assert paused["remaining_seconds"] == 60 and paused["ttl_seconds"] == 60
    assert paused["since"] == "2023-11-14T22:13:20Z" and paused["until"] == "2023-11-14T22:14:20Z"
    clock.advance(59.5)
    status = switch.status()
    assert status["paused"] is True and status["remaining_seconds"] == 1
    assert status["until"] == "2023-11-14T22:14:20Z"
    with pytest.raises(PersistencePaused, match="update_memory not performed: persistence paused"):
        switch.check_writable("update_memory")
    clock.advance(0.5)
    assert switch.status()["paused"] is False
    switch.check_writable("update_memory")


def test_pausing_again_replaces_the_window_and_resume_ends_it(
    switch: PersistenceSwitch, clock: FakeClock
) -> None:
    switch.pause(3600)
    clock.advance(10)
    again = switch.pause(5)
    assert again["was_paused"] is True and again["remaining_seconds"] == 5
    assert switch.resume() == {"ok": True, "paused": False, "was_paused": True}
    assert switch.resume() == {"ok": True, "paused": False, "was_paused": False}
    assert switch.paused is False


def test_fix_and_dry_run_are_downgraded_while_paused(switch: PersistenceSwitch) -> None:
    switch.pause(30)
    fix, note = switch.effective_fix(True)
    assert fix is False and note is not None and "report-only" in note
    assert switch.effective_fix(False) == (False, None)
    dry, note = switch.effective_dry_run(False)
    assert dry is True and note is not None and "dry_run forced" in note
    assert switch.effective_dry_run(True) == (True, None)
    skipped = switch.store_skipped()
    assert skipped["ok"] is True and skipped["result"] == "skipped" and skipped["persisted"] is False
    assert skipped["reason"].startswith("persistence paused until ")


@pytest.mark.parametrize("ttl", [0, -1, MAX_TTL_SECONDS + 1, 1.5, "60", True, None])
def test_bad_ttl_is_refused(switch: PersistenceSwitch, ttl: Any) -> None:
    with pytest.raises(InvalidInput, match="ttl_seconds"):
        switch.pause(ttl)
    assert switch.paused is False


@given(st.integers(min_value=1, max_value=MAX_TTL_SECONDS))
def test_any_ttl_in_range_is_accepted(ttl: int) -> None:
    switch = PersistenceSwitch(clock=lambda: 0.0, wall=lambda: 0.0)
    assert switch.pause(ttl)["remaining_seconds"] == ttl


def test_concurrent_pause_resume_and_status_stay_consistent(switch: PersistenceSwitch) -> None:
    errors: list[BaseException] = []

    def hammer(i: int) -> None:
        try:
            for n in range(300):
                if (i + n) % 3 == 0:
                    switch.pause(1 + n)
                elif (i + n) % 3 == 1:
                    switch.resume()
                state = switch.status()
                assert state["paused"] == (state["until"] is not None)
        except BaseException as exc:  # collected and re-raised in the test thread
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


# -- the Memory API and the tool layer obey the process switch -------------------------------


def test_every_write_is_a_no_op_while_paused(memory: Memory) -> None:
    kept = memory.store("a", "kept before the pause: the blue notebook is on the shelf")
    episode = memory.archive_episode("a", "episode before the pause")
    memory.update_profile("a", "profile before the pause")
    before = memory.list_memories("a")["items"]
    persistence.PROCESS.pause(60)

    skipped = memory.store("a", "said during the pause: the red notebook is in the drawer")
    assert skipped == {**skipped, "ok": True, "result": "skipped", "persisted": False}
    with pytest.raises(Rejected):  # bad input is still reported as such
        memory.store("a", "   ")
    writes = [
        lambda: memory.archive_episode("a", "paused episode"),
        lambda: memory.update_memory(kept["id"], "changed"),
        lambda: memory.update_profile("a", "changed profile"),
        lambda: memory.lock_memory(kept["id"]),
        lambda: memory.unlock_memory(kept["id"]),
        lambda: memory.delete_memory(kept["id"]),
        lambda: memory.delete_episode(episode["id"]),
        lambda: memory.delete_agent_data("a"),
    ]
    for write in writes:
        with pytest.raises(PersistencePaused):
            write()
    recalled = memory.recall("a", "notebook shelf")
    assert [r["id"] for r in recalled["results"]] == [kept["id"]]

    persistence.PROCESS.resume()
    after = memory.list_memories("a")["items"]
    assert after == before  # same rows, same content, same lock, same recall_count (bookkeeping skipped)
    assert after[0]["recall_count"] == 0
    assert memory.get_profile("a")["profile"] == "profile before the pause"
    assert memory.list_episodes("a")["total"] == 1
    assert memory.store("a", "said during the pause: the red notebook is in the drawer")["result"] == "stored"
    memory.recall("a", "notebook shelf")
    assert memory.list_memories("a")["items"][-1]["recall_count"] == 1


def test_pause_expires_for_the_process(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    monkeypatch.setattr(persistence.PROCESS, "_clock", lambda: clock.mono)
    persistence.PROCESS.pause(10)
    assert memory.store("b", "while paused")["persisted"] is False
    clock.advance(10)
    assert memory.store("b", "after the TTL ran out")["result"] == "stored"
    assert persistence.effective_fix(True) == (True, None)


def test_tools_answer_persisted_false(memory: Memory, settings: Settings) -> None:
    kept = memory.store("t", "a row to try to change")
    assert dispatch_tool(memory, settings, "pause_persistence", {"ttl_seconds": 120})["paused"] is True
    status = dispatch_tool(memory, settings, "persistence_status", {})
    assert status["ok"] is True and status["paused"] is True and 0 < status["remaining_seconds"] <= 120
    stored = dispatch_tool(memory, settings, "store", {"agent_id": "t", "message": {"content": "secret"}})
    assert stored["ok"] is True and stored["result"] == "skipped" and stored["persisted"] is False
    for tool, args in [
        ("update_memory", {"memory_id": kept["id"], "content": "x"}),
        ("delete_memory", {"memory_id": kept["ref"]}),
        ("update_profile", {"agent_id": "t", "profile": "p"}),
        ("archive_episode", {"agent_id": "t", "summary": "s"}),
        ("lock_memory", {"memory_id": kept["id"]}),
        ("delete_agent_data", {"agent_id": "t"}),
    ]:
        refused = dispatch_tool(memory, settings, tool, args)
        assert refused["ok"] is False and refused["error_code"] == "persistence_paused", (tool, refused)
        assert refused["persisted"] is False and "resume_persistence" in refused["error"]
    resumed = dispatch_tool(memory, settings, "resume_persistence", {})
    assert resumed == {"ok": True, "paused": False, "was_paused": True}
    assert [r["content"] for r in memory.list_memories("t")["items"]] == ["a row to try to change"]


@pytest.mark.parametrize("ttl", [0, 86401, "60", 1.5, True, None])
def test_pause_tool_refuses_bad_ttl(memory: Memory, settings: Settings, ttl: Any) -> None:
    args = {} if ttl is None else {"ttl_seconds": ttl}
    response = dispatch_tool(memory, settings, "pause_persistence", args)
    assert response["ok"] is False and response["error_code"] == "invalid_input"
    assert "ttl_seconds" in response["error"]
    assert persistence.is_paused() is False
