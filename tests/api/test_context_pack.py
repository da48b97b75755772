"""reconstruct through the Python API, on both engines: the pack's rows, roles, order and budget."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cpersona.errors import InvalidInput
from cpersona.limits import RECONSTRUCT_BUDGET_MAX, RECONSTRUCT_BUDGET_MIN, RECONSTRUCT_MIN_QUOTE_CHARS
from cpersona.memory import Memory
from cpersona.services.context_pack import TRUNCATION_MARKER
from tests.pg_cluster import BOTH_ENGINES
from tests.test_result_types import assert_shape

pytestmark = BOTH_ENGINES


def _ref(memory: Memory, agent: str, text: str, **kw: Any) -> str:
    result = memory.store(agent, text, **kw)
    assert result["result"] == "stored", result
    return str(result["ref"])


def _roles(pack: dict[str, Any]) -> list[tuple[str, str]]:
    assert_shape("reconstruct", pack)  # every pack a test looks at has the documented shape
    return [(item["ref"], item["role"]) for item in pack["items"]]


def _decided(memory: Memory) -> tuple[str, str, str]:
    old = _ref(memory, "a", "Decision: the shop database is PostgreSQL on the big server.")
    new = _ref(memory, "a", "Decision changed: the shop database is SQLite in one file.", supersedes=[old])
    meeting = _ref(
        memory,
        "a",
        "Meeting notes from Tuesday: we weighed hosting costs.",
        associations=[{"relation": "decided", "to": new}, {"relation": "about", "entity": "Shop"}],
    )
    return old, new, meeting


def test_the_current_fact_what_it_replaced_and_what_links_to_it_in_one_call(memory: Memory) -> None:
    old, new, meeting = _decided(memory)
    _ref(memory, "a", "Unrelated: the cat likes tuna.")
    pack = memory.reconstruct("a", "shop database SQLite", limit=1)
    assert _roles(pack) == [(meeting, "linked"), (old, "replaced"), (new, "match")]
    best = pack["items"][-1]
    assert best["text"] == "Decision changed: the shop database is SQLite in one file."
    assert best["seed"] == new and best["score"] > 0 and best["truncated"] is False
    assert best["why"] == "recall match 1 of 1"
    replaced, linked = pack["items"][1], pack["items"][0]
    assert replaced["superseded_by"] == new and replaced["seed"] == new and "score" not in replaced
    assert replaced["text"] == "Decision: the shop database is PostgreSQL on the big server."
    assert linked["link"] == {"from": meeting, "relation": "decided", "to": new}
    assert linked["why"] == f"linked: {meeting} decided {new}"
    assert pack["used_chars"] == sum(len(i["text"]) for i in pack["items"]) <= pack["budget_chars"] == 4000
    assert pack["omitted"] == [] and pack["missing"] == [] and pack["count"] == 3
    # The meeting as a seed names its entity and follows its link out to the decision.
    around = memory.reconstruct("a", refs=[meeting])
    assert _roles(around) == [(new, "linked"), (meeting, "given")]
    assert around["items"][-1]["entities"] == [{"relation": "about", "entity": "Shop"}]


def test_a_superseded_ref_brings_the_row_in_force(memory: Memory) -> None:
    old, new, meeting = _decided(memory)
    pack = memory.reconstruct("a", refs=[old, "mem:999999", "ep:999999"])
    assert _roles(pack) == [(new, "current"), (old, "given")]
    assert pack["items"][0]["why"] == f"in force: supersedes {old}"
    assert pack["items"][-1]["superseded_by"] == new
    assert pack["missing"] == ["mem:999999", "ep:999999"]
    # Another agent's row is missing too (refs name your own rows).
    theirs = _ref(memory, "b", "b's private note")
    assert memory.reconstruct("a", refs=[theirs])["missing"] == [theirs]


def test_the_budget_goes_to_the_seed_first_and_the_rest_is_omitted(memory: Memory) -> None:
    old, new, meeting = _decided(memory)
    size = len("Decision changed: the shop database is SQLite in one file.")
    just_seed = memory.reconstruct(
        "a", "shop database SQLite", limit=1, budget_chars=100
    )  # 42 left: neither neighbour fits
    assert _roles(just_seed) == [(new, "match")]
    assert just_seed["omitted"] == [old, meeting]  # replaced before linked
    assert just_seed["used_chars"] == size
    text = ("Long design note about the database. " * 40).strip()
    long = _ref(memory, "a", text)
    cut = memory.reconstruct("a", refs=[long], budget_chars=300)
    item = cut["items"][-1]
    assert item["truncated"] is True and item["text"].endswith(TRUNCATION_MARKER)
    assert len(item["text"]) == cut["used_chars"] == 300 and item["text_len"] == len(text)
    assert item["text"][: -len(TRUNCATION_MARKER)] == text[:296]


def test_links_to_rows_the_caller_may_not_read_are_not_followed(memory: Memory) -> None:
    theirs = _ref(memory, "b", "b's roadmap: launch in March")
    mine = _ref(
        memory, "a", "our plan follows b's roadmap", associations=[{"relation": "follows", "to": theirs}]
    )
    everyone = memory.reconstruct("a", refs=[mine])  # no ACL: every agent is readable
    assert _roles(everyone) == [(theirs, "linked"), (mine, "given")]
    assert everyone["items"][0]["agent_id"] == "b"
    granted_a = memory.reconstruct("a", refs=[mine], readable_agents=frozenset())
    assert _roles(granted_a) == [(mine, "given")] and granted_a["omitted"] == []
    assert "roadmap: launch" not in str(granted_a)
    with_b = memory.reconstruct("a", refs=[mine], readable_agents=frozenset({"b"}))
    assert _roles(with_b) == _roles(everyone)


def test_recall_statistics_are_not_recorded(memory: Memory) -> None:
    _old, new, _meeting = _decided(memory)
    memory.reconstruct("a", "shop database SQLite")
    rid = int(new.split(":")[1])
    row = memory.get_contents("a", [new])["items"][0]
    assert row["id"] == rid and row["recall_count"] == 0 and row["last_recalled_at"] is None


def test_episodes_are_seeds_without_neighbours(memory: Memory) -> None:
    episode = memory.archive_episode("a", "Session about the shop database migration", keywords=["shop"])
    ref = f"ep:{episode['id']}"
    pack = memory.reconstruct("a", refs=[ref])
    assert _roles(pack) == [(ref, "given")] and pack["items"][0]["type"] == "episode"
    assert pack["items"][0]["text"] == "Session about the shop database migration"


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"query": "   "},
        {"query": "x", "refs": "mem:1"},
        {"query": "x", "refs": ["mem:abc"]},
        {"query": "x", "refs": ["note:1"]},
        {"query": "x", "refs": [1]},
        {"query": "x", "refs": ["mem:1"] * 21},
        {"query": "x", "budget_chars": RECONSTRUCT_BUDGET_MIN - 1},
        {"query": "x", "budget_chars": RECONSTRUCT_BUDGET_MAX + 1},
        {"query": "x", "budget_chars": True},
        {"query": "x", "limit": 0},
        {"query": "x", "limit": 21},
        {"query": "x", "time_cue": "last week"},
        {"query": "x", "time_cue": {"phrase": "the day after never"}},
        {"query": 5},
    ],
)
def test_bad_input_is_refused(memory: Memory, arguments: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        memory.reconstruct("a", **arguments)


def test_a_time_cue_alone_seeds_from_the_period(memory: Memory) -> None:
    memory.store("a", "spring planting", timestamp="2023-05-08T10:00:00Z")
    memory.store("a", "autumn harvest", timestamp="2023-10-08T10:00:00Z")
    pack = memory.reconstruct("a", time_cue={"start": "2023-05", "end": "2023-05", "certainty": "sure"})
    assert_shape("reconstruct", pack)
    assert [i["text"] for i in pack["items"]] == ["spring planting"]
    assert pack["time_cue"]["certainty"] == "sure"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(budget=st.integers(RECONSTRUCT_BUDGET_MIN, 2000), limit=st.integers(1, 6))
def test_the_pack_never_exceeds_its_budget(memory: Memory, budget: int, limit: int) -> None:
    if not memory.list_memories("p")["items"]:
        previous: list[str] = []
        for n in range(8):
            text = f"project note {n}: " + "detail " * (n * 15 + 1)
            links = [{"relation": "see", "to": previous[-1]}] if previous else []
            supersedes = [previous[-2]] if n % 3 == 2 else None
            previous.append(_ref(memory, "p", text, associations=links, supersedes=supersedes))
    pack = memory.reconstruct("p", "project note detail", budget_chars=budget, limit=limit)
    assert_shape("reconstruct", pack)
    texts = [i["text"] for i in pack["items"]]
    assert pack["used_chars"] == sum(map(len, texts)) <= budget
    refs = [i["ref"] for i in pack["items"]]
    assert len(refs) == len(set(refs)) and not set(refs) & set(pack["omitted"])
    for item in pack["items"]:
        assert item["truncated"] == (len(item["text"]) < item["text_len"])
        if item["truncated"]:
            assert (
                item["text"].endswith(TRUNCATION_MARKER) and len(item["text"]) >= RECONSTRUCT_MIN_QUOTE_CHARS
            )
        seeds = {i["ref"] for i in pack["items"] if i["role"] in ("match", "given")}
        assert item["seed"] in seeds  # a neighbour is there only beside its seed
    if pack["items"]:
        assert pack["items"][-1]["role"] == "match"  # the best match is last


def test_a_row_deleted_after_recall_read_it_is_quoted_without_neighbours(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    _old, new, _meeting = _decided(memory)
    real = memory.recaller.recall

    def recall_then_delete(*args: Any, **kwargs: Any) -> Any:
        answer = real(*args, **kwargs)
        memory.delete_memory(int(new.split(":")[1]), agent_id="a")  # between recall's read and the pack's
        return answer

    monkeypatch.setattr(memory.recaller, "recall", recall_then_delete)
    pack = memory.reconstruct("a", "shop database SQLite", limit=1)
    assert pack["ok"] is True and pack["items"][-1]["ref"] == new
