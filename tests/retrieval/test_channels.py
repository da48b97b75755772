"""The retriever registry: a channel is one module and one registration line (docs/architecture.md
"How to add a retrieval channel"), and the pipeline, fusion and the trace follow the registry."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cpersona.config import Settings
from cpersona.memory import Memory
from cpersona.retrieval import fusion
from cpersona.retrieval.candidates import MEMORY, Key
from cpersona.retrieval.channels import CHANNEL_ORDER, RETRIEVERS
from cpersona.retrieval.pipeline import RecallPipeline
from cpersona.retrieval.retriever import ChannelHits, ChannelQuery, Searching, answered
from cpersona.storage.interface import Session


class NewestMemory:
    """A channel written as the guide says: the scope's newest memory, whatever the query."""

    name = "newest"

    def search(self, session: Session, query: ChannelQuery) -> Searching | None:
        rows = session.memories.list_recent(query.request.scope, 1)
        return answered(ChannelHits([(Key(MEMORY, int(r["id"])), 1.0) for r in rows]))


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    # Keyword-only: the registry is what is tested here, not the model.
    settings = Settings(db_path=tmp_path / "m.db", embedding_mode="none", update_check=False)
    with Memory(settings) as memory:
        yield memory


def by_id(out: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {int(r["id"]): r for r in out["results"]}


def test_the_registry_names_each_channel_once_in_fusion_order() -> None:
    names = [r.name for r in RETRIEVERS]
    assert len(set(names)) == len(names)
    assert fusion.CHANNEL_ORDER == CHANNEL_ORDER == tuple(names)
    assert names[0] == fusion.VECTOR  # rsf sums in this order: reordering it would change scores


def test_a_pipeline_runs_only_the_channels_it_is_given() -> None:
    settings = Settings()
    assert RecallPipeline(settings).order == CHANNEL_ORDER
    words = RecallPipeline(settings, channels=frozenset({fusion.FTS_WORDS, fusion.FTS_EPISODES}))
    assert words.order == (fusion.FTS_WORDS, fusion.FTS_EPISODES)  # registry order, whatever the set's


def test_a_registered_channel_is_retrieved_fused_and_traced(mem: Memory) -> None:
    # Days apart: not one session, so the context channel leaves them alone.
    pottery = mem.store("a", "the pottery workshop made a blue bowl", timestamp="2026-03-01T10:00:00Z")["id"]
    lisbon = mem.store("a", "my sister is moving to Lisbon", timestamp="2026-03-09T10:00:00Z")["id"]
    plain = mem.recall("a", "pottery bowl", record=False, trace=True)
    assert set(by_id(plain)) == {pottery}
    assert "newest" not in plain["trace"]["channels"]

    shipped = mem.recaller.pipeline
    mem.recaller.pipeline = RecallPipeline(
        shipped.settings, gate=shipped.gate, retrievers=(*RETRIEVERS, NewestMemory())
    )
    out = mem.recall("a", "pottery bowl", record=False, trace=True)
    assert set(by_id(out)) == {pottery, lisbon}
    assert out["results"][-1]["id"] == pottery  # two keyword channels above one toy channel
    trace = out["trace"]
    assert trace["channels"]["newest"]["hits"] == [{"ref": f"mem:{lisbon}", "score": 1.0}]
    fused = {c["ref"]: c for c in trace["fusion"]["candidates"]}
    assert fused[f"mem:{lisbon}"]["channels"] == {"newest": 1.0}
    # Registered last, the new channel leaves every existing channel's sum as it was.
    assert by_id(out)[pottery]["match_reason"]["rsf"] == by_id(plain)[pottery]["match_reason"]["rsf"]
    assert "keyword_channels" in out["search"] and "newest" not in out["search"]["keyword_channels"]


def test_the_memory_keyword_channels_take_the_agents_keyword_weight(mem: Memory) -> None:
    # An agent whose calibration found long records gets its memory keyword channels at that weight
    # (the calibrator's keyword_weight); the response says so, and the rsf sum shrinks to match.
    pottery = mem.store("a", "the pottery workshop made a blue bowl")["id"]
    full = mem.recall("a", "pottery bowl", record=False)
    assert "keyword_weight" not in full["search"]
    mem.recaller.keyword_weight = lambda agent: 0.5 if agent == "a" else 1.0
    half = mem.recall("a", "pottery bowl", record=False)
    assert half["search"]["keyword_weight"] == 0.5
    assert by_id(half)[pottery]["match_reason"]["rsf"] == pytest.approx(
        by_id(full)[pottery]["match_reason"]["rsf"] / 2
    )
    assert "keyword_weight" not in mem.recall("b", "pottery bowl", record=False)["search"]
