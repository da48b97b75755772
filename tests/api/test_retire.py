"""retire_memory / unretire_memory (issue 39): out of recall without a successor, kept for get_history and
recall(include_retired), locked rows refused, another agent's row not found; both engines."""

from __future__ import annotations

import pytest
from pg_cluster import BOTH_ENGINES

from cpersona.errors import InvalidInput, LockedRow, NotFound
from cpersona.memory import Memory

pytestmark = BOTH_ENGINES


def _refs(result: dict[str, object]) -> list[str]:
    return [str(r["ref"]) for r in result["results"]]  # type: ignore[index, attr-defined]


def test_a_retired_memory_leaves_recall_and_stays_in_history(memory: Memory) -> None:
    kept = memory.store("a", "the standup is in room Kestrel")["ref"]
    gone = memory.store("a", "the standup is in room Osprey until the move")["ref"]
    assert gone in _refs(memory.recall("a", "standup room Osprey"))
    retired = memory.retire_memory(gone, "we moved to Kestrel", agent_id="a")
    assert retired["retired"] is True and retired["was_retired"] is False
    assert retired["retire_reason"] == "we moved to Kestrel"
    assert gone not in _refs(memory.recall("a", "standup room Osprey"))
    assert gone not in _refs(memory.recall("a", ""))  # the most-recent path too
    assert kept in _refs(memory.recall("a", "standup room"))
    wide = memory.recall("a", "standup room Osprey", include_retired=True)
    row = next(r for r in wide["results"] if r["ref"] == gone)
    assert row["retired_at"] == retired["retired_at"] and row["retire_reason"] == "we moved to Kestrel"
    history = memory.get_history(gone, agent_id="a")
    assert [r["ref"] for r in history["history"]] == [gone]
    assert history["history"][0]["retired_at"] == retired["retired_at"]
    assert memory.get_contents("a", [gone])["items"][0]["content"].startswith("the standup")

    again = memory.retire_memory(gone, "another reason")
    assert again["was_retired"] is True and again["retire_reason"] == "we moved to Kestrel"
    back = memory.unretire_memory(gone, agent_id="a")
    assert back == {"ok": True, "id": back["id"], "ref": gone, "retired": False, "was_retired": True}
    assert gone in _refs(memory.recall("a", "standup room Osprey"))
    assert memory.unretire_memory(gone)["was_retired"] is False


def test_locked_rows_refuse_and_other_agents_rows_are_not_found(memory: Memory) -> None:
    ref = memory.store("a", "the on-call rota for March")["ref"]
    memory.lock_memory(ref)
    with pytest.raises(LockedRow):
        memory.retire_memory(ref)
    memory.unlock_memory(ref)
    with pytest.raises(NotFound):
        memory.retire_memory(ref, agent_id="b")
    with pytest.raises(NotFound):
        memory.retire_memory(ref, allowed_agents=["b"])
    memory.retire_memory(ref)
    memory.lock_memory(ref)
    with pytest.raises(LockedRow):
        memory.unretire_memory(ref)
    with pytest.raises(NotFound):
        memory.get_history(ref, agent_id="b")


@pytest.mark.parametrize("bad", [42, ["x"], "x" * 1001])
def test_a_bad_reason_is_refused(memory: Memory, bad: object) -> None:
    ref = memory.store("a", "something to retire")["ref"]
    with pytest.raises(InvalidInput, match="reason"):
        memory.retire_memory(ref, bad)  # type: ignore[arg-type]
    assert memory.retire_memory(ref)["retire_reason"] is None


def test_a_reason_holding_a_secret_is_redacted(memory: Memory) -> None:
    ref = memory.store("a", "the old deploy key")["ref"]
    retired = memory.retire_memory(ref, "rotated AKIAQ7ZX4TYHGF2LMN8P")
    assert retired["retire_reason"] == "rotated [redacted: aws-access-key]"
