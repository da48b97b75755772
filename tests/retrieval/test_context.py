"""The context channel (retrieval/context.py): the turns next to the best hits, on both engines, with the
real MiniLM model (docs/retrieval.md "The context channel")."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pg_cluster import BOTH_ENGINES

from cpersona.config import ConfigError, Settings
from cpersona.core.text import normalise_timestamp
from cpersona.memory import Memory
from cpersona.retrieval import context, fusion
from cpersona.retrieval.candidates import Key
from cpersona.storage.scope import Scope

DAY = "2024-03-04T10:00:00Z"
LATER = "2024-03-04T18:00:00Z"  # eight hours on: another session
DIALOGUE = [
    ("Did you finally go to the pottery workshop downtown?", DAY),
    ("Yes! Last Saturday, and I made a lopsided blue bowl.", DAY),
    ("Ha, I love that. Send me a photo of it!", DAY),
    ("My sister is moving to Lisbon next spring.", LATER),
]


def make_memory(tmp_path: Path, db_url: str | None, backend: Any, **extra: Any) -> Memory:
    mem = Memory(
        Settings(
            db_path=tmp_path / "m.db",
            db_url=db_url,
            embedding_mode="onnx",
            embedding_model="all-minilm-l6-v2",
            recent_recall_penalty=1.0,
            update_check=False,
            auto_fetch_model=False,
            **extra,
        ),
        backend=backend,
    )
    assert mem.wait_until_ready(60)
    return mem


@pytest.fixture
def mem(tmp_path: Path, new_db_url, minilm_backend) -> Iterator[Memory]:
    with make_memory(tmp_path, new_db_url(), minilm_backend) as memory:
        yield memory


def store_dialogue(mem: Memory, agent: str = "a", **axes: Any) -> list[int]:
    ids = []
    for text, when in DIALOGUE:
        out = mem.store(agent, text, timestamp=when, **axes)
        assert out["result"] == "stored", out
        ids.append(out["id"])
    mem.drain_queue()
    return ids


def by_content(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["content"]: r for r in results if r.get("type") == "memory"}


@BOTH_ENGINES
def test_the_reply_after_a_hit_gets_a_share_of_its_score(mem: Memory) -> None:
    ids = store_dialogue(mem)
    for i in range(12):  # enough unrelated rows that the vector channel does not return everything
        mem.store("a", f"Reminder {i}: water the {['ferns', 'cacti', 'orchids'][i % 3]} on the balcony")
    mem.drain_queue()
    out = mem.recall("a", "pottery workshop", limit=5)
    found = by_content(out["results"])
    question, reply = DIALOGUE[0][0], DIALOGUE[1][0]
    assert out["results"][-1]["content"] == question
    assert reply in found and found[reply]["match_reason"]["context"] > 0
    parent = found[question]["match_reason"]
    # score = rsf + context; the reply's share is the weight times its best parent's score over distance
    assert found[question]["match_reason"]["score"] == pytest.approx(
        parent["rsf"] + parent.get("context", 0.0)
    )
    assert found[reply]["id"] == ids[1]
    # the row eight hours later is another session: no share from the workshop question
    later = found.get(DIALOGUE[3][0])
    assert later is None or "context" not in later["match_reason"]


@BOTH_ENGINES
def test_weight_zero_turns_the_channel_off(tmp_path: Path, new_db_url, minilm_backend) -> None:
    with make_memory(tmp_path, new_db_url(), minilm_backend, context_weight=0.0) as memory:
        store_dialogue(memory)
        out = memory.recall("a", "pottery workshop", limit=5)
        assert all("context" not in r["match_reason"] for r in out["results"] if "match_reason" in r)


@BOTH_ENGINES
def test_neighbours_never_cross_scope_or_session(mem: Memory) -> None:
    """Another agent's, project's or channel's rows interleaved by id are stepped over, never returned."""
    mine: list[int] = []
    for text, when in DIALOGUE[:3]:
        mine.append(mem.store("a", text, timestamp=when)["id"])
        mem.store("b", f"b says: {text}", timestamp=when)  # another agent, same minute
        mem.store("a", f"project row: {text}", timestamp=when, project_id="p")
    mem.drain_queue()
    with mem.storage.read() as session:
        rows = session.memories.get_many(mine, Scope("a", ""))
        parent = rows[mine[0]]
        links, found = context.neighbours(
            session.memories, Scope("a", ""), [parent], context.ContextPolicy(reach=2)
        )
    assert sorted(links) == mine[1:]  # the agent's own next two turns, at distance 1 and 2
    assert [d for _, d in links[mine[1]]] == [1] and [d for _, d in links[mine[2]]] == [2]
    assert all(row["agent_id"] == "a" for row in found.values())
    out = mem.recall("a", "pottery workshop", project_id="", limit=10)
    assert {r["agent_id"] for r in out["results"]} == {"a"}
    assert {r["project_id"] for r in out["results"] if r["type"] == "memory"} == {""}


@BOTH_ENGINES
def test_keyword_only_recall_only_lifts_what_matched(tmp_path: Path, new_db_url) -> None:
    with Memory(
        Settings(db_path=tmp_path / "k.db", db_url=new_db_url(), embedding_mode="none", update_check=False)
    ) as memory:
        for text, when in DIALOGUE:
            memory.store("a", text, timestamp=when)
        out = memory.recall("a", "pottery workshop")
        assert [r["content"] for r in out["results"]] == [DIALOGUE[0][0]]


@BOTH_ENGINES
def test_filters_apply_to_neighbours(mem: Memory) -> None:
    store_dialogue(mem)
    reply = DIALOGUE[1][0]
    out = mem.recall("a", "pottery workshop", exclude_contents=[reply], limit=10)
    assert reply not in by_content(out["results"])


def test_context_weight_setting_is_validated() -> None:
    assert Settings.from_env({"CPERSONA_CONTEXT_WEIGHT": "0.25"}).context_weight == 0.25
    for bad in ("-0.1", "1.5", "nan", "lots"):
        with pytest.raises(ConfigError):
            Settings.from_env({"CPERSONA_CONTEXT_WEIGHT": bad})


def test_policy_is_rsf_only() -> None:
    assert context.policy_for("rsf", 0.6) == context.ContextPolicy(weight=0.6)
    assert context.policy_for("rrf", 0.6) is None and context.policy_for("cascade", 0.6) is None
    assert context.policy_for("rsf", 0.0) is None


def memory_key(rid: int) -> Key:
    return Key("memory", rid)


def test_spread_keeps_rsf_the_retrievers_sum() -> None:
    fused = {
        memory_key(1): fusion.Fused(memory_key(1), 2.0, "rsf", rsf=2.0, channels={"vector": 0.9}),
        memory_key(2): fusion.Fused(memory_key(2), 0.5, "rsf", rsf=0.5, channels={"vector": 0.3}),
    }
    stamp = normalise_timestamp(DAY)  # the stored form
    rows = {
        i: {"id": i, "agent_id": "a", "project_id": "", "channel": "", "timestamp": stamp} for i in (1, 2, 3)
    }

    class Rows:
        def get_many(self, ids: list[int], scope: Scope | None = None) -> dict[int, dict[str, Any]]:
            return {i: rows[i] for i in ids if i in rows}

    added = context.spread(
        fused,
        {memory_key(1): rows[1], memory_key(2): rows[2]},
        Rows(),  # type: ignore[arg-type]
        Scope("a"),
        context.ContextPolicy(parents=1, weight=0.5, reach=2),
    )
    assert fused[memory_key(2)].rsf == 0.5 and fused[memory_key(2)].score == pytest.approx(0.5 + 0.5 * 2.0)
    assert fused[memory_key(3)].rsf == 0.0 and fused[memory_key(3)].score == pytest.approx(0.5 * 2.0 / 2)
    assert {key.ref for key in added} == {"mem:3"}


def test_below_parent_stops_a_neighbour_under_the_row_that_lent_it() -> None:
    """Keyword-only ranking (``above_parent`` off): rows 1 and 2 both matched; 2 would pass its parent 1
    with the share 1 lends it (0.9 + 0.6 × 1.0); 3 gets half that share (two rows away)."""
    fused = {
        memory_key(1): fusion.Fused(memory_key(1), 1.0, "rsf", rsf=1.0, channels={"fts_memories": 1.0}),
        memory_key(2): fusion.Fused(memory_key(2), 0.9, "rsf", rsf=0.9, channels={"fts_memories": 0.9}),
    }
    stamp = normalise_timestamp(DAY)
    rows = {
        i: {"id": i, "agent_id": "a", "project_id": "", "channel": "", "timestamp": stamp} for i in (1, 2, 3)
    }

    class Rows:
        def get_many(self, ids: list[int], scope: Scope | None = None) -> dict[int, dict[str, Any]]:
            return {i: rows[i] for i in ids if i in rows}

    def run(above_parent: bool, parents: int = 1) -> dict[int, fusion.Fused]:
        entries = {
            key: fusion.Fused(key, e.score, "rsf", rsf=e.rsf, channels=dict(e.channels))
            for key, e in fused.items()
        }
        context.spread(
            entries,
            {memory_key(1): rows[1], memory_key(2): rows[2]},
            Rows(),  # type: ignore[arg-type]
            Scope("a"),
            context.ContextPolicy(parents=parents, weight=0.6, reach=2, above_parent=above_parent),
        )
        return {key.id: entry for key, entry in entries.items()}

    free = {rid: entry.score for rid, entry in run(above_parent=True).items()}
    assert free[2] == pytest.approx(0.9 + 0.6 * 1.0) and free[2] > free[1]
    held = {rid: entry.score for rid, entry in run(above_parent=False).items()}
    assert held[1] == 1.0 and held[2] == pytest.approx(context.BELOW_PARENT * 1.0)
    assert held[3] == pytest.approx(0.6 * 1.0 / 2)  # under the ceiling: its share whole
    # Both parents: 1 is 2's neighbour too, but already above 2, so it records no share at all.
    both = run(above_parent=False, parents=2)
    assert both[1].score == 1.0 and "context" not in both[1].channels


dialogue_rows = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]),
        st.sampled_from(["", "p"]),
        st.sampled_from(["", "slack"]),
        st.sampled_from(DIALOGUE),
    ),
    min_size=1,
    max_size=14,
)


@BOTH_ENGINES
def test_context_rows_stay_in_scope_and_session(tmp_path: Path, new_db_url, minilm_backend) -> None:
    """Random interleavings of agents, projects, channels and sessions: every row recall returns is in
    the caller's scope, and a row lifted by context is in the same session as another row returned (its parent)."""
    # One database and one Memory for all examples (opening a Memory self-tests the model, the costly
    # part of an example); each example writes under agent ids of its own, so the earlier examples'
    # rows are other agents' rows, which must stay out of scope too.
    examples = itertools.count()
    with make_memory(tmp_path, new_db_url(), minilm_backend) as memory:

        @settings(max_examples=12, deadline=None)
        @given(
            corpus=dialogue_rows, agent=st.sampled_from(["a", "b"]), project=st.sampled_from([None, "", "p"])
        )
        def check(
            corpus: list[tuple[str, str, str, tuple[str, str]]], agent: str, project: str | None
        ) -> None:
            tag = f"-{next(examples)}"
            for who, proj, chan, (text, when) in corpus:
                memory.store(who + tag, text, project_id=proj, channel=chan, timestamp=when)
            memory.drain_queue()
            out = memory.recall(agent + tag, "pottery workshop bowl", project_id=project, limit=30)
            scope = Scope(agent + tag, project)
            results = list(reversed(out["results"]))  # best first
            for i, row in enumerate(results):
                assert scope.admits(row["agent_id"], row["project_id"], row["channel"]), (scope, row)
                if "context" in row.get("match_reason", {}):
                    assert any(context.same_session(row, above) for above in results[:i] + results[i + 1 :])

        check()
