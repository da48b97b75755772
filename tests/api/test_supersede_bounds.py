"""Supersede chains and fan-ins past the history bound (issue 36 points 1 and 6), on both engines:
a cycle is refused at any length, ``current`` is the true head, a history longer than its bound
says it was cut and where, and one step of the walk reads no more than the bound."""

from __future__ import annotations

from typing import Any

import pytest
from pg_cluster import BOTH_ENGINES

from cpersona.errors import SupersedeRefused
from cpersona.memory import Memory
from cpersona.services.supersede import HISTORY_CUT_REFS, MAX_HISTORY_ROWS

pytestmark = BOTH_ENGINES

CHAIN = MAX_HISTORY_ROWS + 100  # the 1,100-row chain


def chain(memory: Memory, length: int) -> list[str]:
    refs = [memory.store("a", "version 0 of the plan")["ref"]]
    for n in range(1, length):
        refs.append(memory.store("a", f"version {n} of the plan", supersedes=[refs[-1]])["ref"])
    return refs


def refs_of(out: dict[str, Any]) -> list[str]:
    return [row["ref"] for row in out["history"]]


@pytest.mark.slow
def test_a_chain_past_the_bound_names_its_true_head_and_refuses_a_cycle(memory: Memory) -> None:
    refs = chain(memory, CHAIN)
    oldest, head = refs[0], refs[-1]
    out = memory.get_history(oldest, agent_id="a")
    assert out["current"] == head  # it named mem:1001 before, itself superseded
    assert out["count"] == MAX_HISTORY_ROWS and out["truncated"] is True
    listed = refs_of(out)
    assert listed[0] == oldest and listed[-1] == head  # the row asked for, and the one in force
    assert listed[: MAX_HISTORY_ROWS - 1] == refs[: MAX_HISTORY_ROWS - 1]
    assert out["cut_at"] == [refs[MAX_HISTORY_ROWS - 2], head]  # the gap lies between these two

    with pytest.raises(SupersedeRefused) as caught:  # the cycle closed over 1,100 rows before
        memory.update_memory(oldest, agent_id="a", supersedes=[head])
    assert caught.value.code == "supersede_refused" and "cycle" in str(caught.value)
    assert [r["ref"] for r in memory.recall("a", "plan", limit=5)["results"]] == [head]

    short = memory.get_history(head, agent_id="a")
    assert short["current"] == head and short["truncated"] is True and short["count"] == MAX_HISTORY_ROWS


def test_a_short_chain_is_whole_and_says_nothing_of_cuts(memory: Memory) -> None:
    refs = chain(memory, 5)
    out = memory.get_history(refs[2], agent_id="a")
    assert refs_of(out) == refs and out["current"] == refs[-1]
    assert "truncated" not in out and "cut_at" not in out
    with pytest.raises(SupersedeRefused):
        memory.update_memory(refs[0], agent_id="a", supersedes=[refs[-1]])


@pytest.mark.slow
def test_a_wide_fan_in_is_read_up_to_the_bound(memory: Memory) -> None:
    head = memory.store("a", "the one plan in force")["ref"]
    older = [memory.store("a", f"an old plan number {n}")["ref"] for n in range(MAX_HISTORY_ROWS + 150)]
    for start in range(0, len(older), 100):
        memory.update_memory(head, agent_id="a", supersedes=older[start : start + 100])
    out = memory.get_history(head, agent_id="a")
    assert out["count"] == MAX_HISTORY_ROWS and out["truncated"] is True
    assert out["cut_at"] == [head] and refs_of(out)[-1] == head
    assert len(out["cut_at"]) <= HISTORY_CUT_REFS
    last = older[-1]  # beyond the first thousand read from the head, yet the row asked for is listed
    mine = memory.get_history(last, agent_id="a")
    assert last in refs_of(mine) and mine["current"] == head and mine["truncated"] is True
