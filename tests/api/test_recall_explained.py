"""Every number explained, through the real pipeline with the real MiniLM model: match_reason's factors
multiply to the score (a property over fusion modes, penalties, confidence and the gate), the trace
holds every stage and agrees with the answer, empty answers carry their sentence, and an agent id that
owns nothing is named as such (recall, listings, export, check_health)."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cpersona.config import Settings
from cpersona.core.text import parse_ts, utc_now
from cpersona.errors import InvalidInput
from cpersona.memory import Memory
from cpersona.retrieval.pipeline import NoGate, RecallPipeline
from cpersona.retrieval.trace import TRACE_ROWS

pytestmark = pytest.mark.slow

FACTS = [
    "The deploy pipeline for payments runs on Jenkins every night at 2am",
    "Ana prefers dark roast coffee from Kenya",
    "We moved the staging database to Postgres 16 in March",
    "The team standup is at 9:30 every weekday in room Kestrel",
    "Bob is allergic to peanuts and shellfish",
    "The quarterly finance report is due on the 15th",
    "Our Kubernetes cluster runs in eu-west-1",
    "Release 2.4 shipped the new login page with passkeys",
    "Carla leads the mobile team and reviews every iOS change",
    "Invoices are archived for seven years in the cold storage bucket",
    "Grafana alerts for the checkout service go to the payments channel",
    "Incident note: ERR_PAY_4021 means the card issuer declined the payment",
]
WORDS = [
    "payments",
    "coffee",
    "Kenya",
    "staging",
    "database",
    "standup",
    "Kestrel",
    "ERR_PAY_4021",
    "iOS",
    "invoices",
    "Grafana",
    "deploy",
    "what",
    "when",
    "who",
    "the",
    "team",
    "volcano",
    "Peru",
]
BASES = {"rrf", "rsf", "rsf+context", "cascade", "cosine"}
FACTORS = {
    "episode_boundary_penalty",
    "recent_recall_penalty",
    "time_decay",
    "resolved_episode",
    "recall_count_boost",
    "confidence_cap",
    "recency",
    "newest_of_equals",
    "session_diversity",
    "time_cue",
}
#: Time cues around the rows' own time (they are stored now): boosts in and near, a filter, none.
CUES = [
    None,
    {"phrase": "today"},
    {"phrase": "today", "certainty": "vague"},
    {"phrase": "yesterday", "certainty": "likely"},
    {"phrase": "last year", "certainty": "vague"},
    {"phrase": "today", "certainty": "sure"},
]


@pytest.fixture(scope="module")
def mem(tmp_path_factory: pytest.TempPathFactory, minilm_models_dir: Path) -> Iterator[Memory]:
    tmp = tmp_path_factory.mktemp("explained")
    base = Settings(
        db_path=tmp / "memory.db",
        embedding_mode="onnx",
        models_dir=minilm_models_dir,
        embedding_model="all-minilm-l6-v2",
        update_check=False,
        auto_fetch_model=False,
        auto_calibrate=False,
    )
    with Memory(base) as memory:
        assert memory.wait_until_ready(60)
        memory.embeddings.settle_query_kernel()  # the calibration and every recall after it: one kernel
        for fact in FACTS:
            memory.store("a", fact)
        time.sleep(0.05)  # the episode is newer than every memory: the boundary penalty has hours to act on
        memory.archive_episode(
            "a", "Session about the payments deploy and the staging database", resolved=True
        )
        memory.archive_episode("a", "Coffee preferences of the team", keywords=["coffee", "Kenya"])
        memory.calibrate_threshold("a")
        yield memory


def product(factors: dict[str, float]) -> float:
    return math.prod(factors.values())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=5),
    noise=st.text(max_size=12),
    mode=st.sampled_from(["rrf", "rsf", "cascade"]),
    confidence=st.booleans(),
    gate_on=st.booleans(),
    penalty=st.floats(0.05, 1.0),
    rate=st.floats(0.0, 20000.0),
    floor=st.floats(0.0, 1.0),
    deep=st.booleans(),
    repeat=st.booleans(),
    limit=st.integers(1, 20),
    cue=st.sampled_from(CUES),
)
def test_match_reason_factors_multiply_to_the_score(
    mem: Memory,
    words: list[str],
    noise: str,
    mode: str,
    confidence: bool,
    gate_on: bool,
    penalty: float,
    rate: float,
    floor: float,
    deep: bool,
    repeat: bool,
    limit: int,
    cue: dict | None,
) -> None:
    tuned = mem.settings.with_overrides(
        recall_mode=mode,
        confidence_enabled=confidence,
        recent_recall_penalty=penalty,
        episode_decay_rate=rate,
        episode_decay_floor=floor,
    )
    mem.recaller.pipeline = RecallPipeline(tuned, gate=mem.calibration.gate() if gate_on else NoGate())
    query = " ".join(words) + " " + noise
    if repeat:  # rows returned a moment ago get the recent-recall penalty
        mem.recall("a", query, limit=limit, deep=deep)
    now = utc_now()
    out = mem.recall("a", query, limit=limit, deep=deep, record=False, trace=True, time_cue=cue)
    scored = {r["ref"]: r for r in out["trace"]["scored"]["rows"]}
    for row in out["results"]:
        reason = row.get("match_reason")
        if reason is None:
            assert row["type"] == "profile"
            continue
        factors = reason["factors"]
        names = list(factors)
        assert names[0] in BASES and set(names[1:]) <= FACTORS, factors
        assert math.isclose(product(factors), reason["score"], rel_tol=1e-4, abs_tol=1e-5), reason
        if names[0] == "rsf+context":  # the context channel adds its share to the retrievers' sum
            assert factors[names[0]] == pytest.approx(reason["rsf"] + reason["context"], abs=2e-6)
        elif reason["signal"] in ("rrf", "rsf"):
            assert factors[names[0]] == reason[reason["signal"]]
        if reason["signal"] == "confidence":
            assert names[0] == "cosine"
        last = row.get("last_recalled_at")  # as the pipeline saw it, before this recall's bookkeeping
        recent = row["type"] == "memory" and last is not None and (now - parse_ts(last)).total_seconds() < 240
        if recent and penalty != 1.0:
            assert factors.get("recent_recall_penalty") == pytest.approx(penalty, abs=1e-6), (row, factors)
        if not recent:
            assert "recent_recall_penalty" not in factors
        if deep or rate == 0:
            assert "episode_boundary_penalty" not in factors
        acted = out.get("time_cue")  # the caller's cue, or a date phrase the reader found in the query
        if acted is None or acted["certainty"] == "sure":
            assert "time_cue" not in factors  # no cue, or a filter: nothing to multiply
        if cue is not None:
            assert acted is not None and acted["origin"] == "caller"
        assert reason.get("gate") in ((None,) if not gate_on else ("passed", "exact_match", "fallback"))
        if row["ref"] in scored:
            assert scored[row["ref"]]["factors"] == factors
    mem.recaller.pipeline = RecallPipeline(mem.settings, gate=mem.calibration.gate())


def test_a_recent_recall_names_its_penalty(mem: Memory) -> None:
    tuned = mem.settings.with_overrides(recent_recall_penalty=0.7)
    mem.recaller.pipeline = RecallPipeline(tuned, gate=mem.calibration.gate())
    try:
        first = mem.recall("a", "how do payments get deployed", limit=3)
        again = mem.recall("a", "how do payments get deployed", limit=3, record=False)
        returned = {r["ref"] for r in first["results"] if r["type"] == "memory"}
        seen = {r["ref"]: r["match_reason"] for r in again["results"]}
        assert returned & set(seen)
        for ref in returned & set(seen):
            assert seen[ref]["factors"]["recent_recall_penalty"] == 0.7
    finally:
        mem.recaller.pipeline = RecallPipeline(mem.settings, gate=mem.calibration.gate())


def test_the_trace_holds_every_stage_and_agrees_with_the_answer(mem: Memory) -> None:
    out = mem.recall("a", "which database does staging use", limit=5, record=False, trace=True)
    trace = out["trace"]
    assert set(trace) == {"depth", "channels", "fusion", "filtered_out", "scored", "gate", "returned"}
    assert set(trace["channels"]) == {"vector", "fts_memories", "fts_words", "fts_episodes"}
    assert trace["channels"]["vector"]["hits"][0]["score"] == pytest.approx(
        out["gate"]["top_cosine"], abs=1e-6
    )
    assert trace["returned"] == [r["ref"] for r in reversed(out["results"])]
    assert trace["fusion"]["mode"] == mem.settings.recall_mode and trace["fusion"]["total"] >= len(
        trace["returned"]
    )
    assert trace["gate"]["kind"] == out["gate"]["kind"] and trace["gate"]["kept"] >= len(out["results"])
    for stage in (*trace["channels"].values(), trace["fusion"], trace["scored"]):
        rows = stage.get("hits") or stage.get("candidates") or stage.get("rows") or []
        assert len(rows) <= TRACE_ROWS and stage["total"] >= len(rows)
    wide = mem.recall("a", "the team", limit=100, record=False, trace=True)["trace"]
    assert len(wide["scored"]["rows"]) <= TRACE_ROWS and len(wide["fusion"]["candidates"]) <= TRACE_ROWS
    assert "trace" not in mem.recall("a", "which database does staging use", record=False)


def test_an_empty_answer_carries_its_sentence(mem: Memory) -> None:
    out = mem.recall("a", "what is the capital of Peru", record=False)
    assert out["count"] == 0 and out["gate"]["passed"] is False
    said = out["explanation"]
    assert "calibrated balanced gate" in said and f"{out['gate']['threshold']:.3f}" in said
    assert f"{out['gate']['top_cosine']:.3f}" in said
    # Few words besides the identifier would give the row enough evidence to pass the gate: the
    # identifier must be a small part of the question for the exact-match rule to be what returns it.
    exact = mem.recall(
        "a", "which volcano erupted near the soup kitchen when ERR_PAY_4021 happened", record=False
    )
    assert exact["count"] == 1 and exact["explanation"].startswith("Only 1 exact match(es) returned")
    assert "explanation" not in mem.recall("a", "what coffee does Ana like", record=False)


def test_an_agent_with_no_rows_is_named_not_an_error(mem: Memory, tmp_path: Path) -> None:
    mem.update_profile("profile-only", "likes tea")
    for out in (
        mem.recall("typo-a", "coffee"),
        mem.recall("typo-a", ""),
        mem.list_memories("typo-a"),
        mem.list_episodes("typo-a"),
        mem.check_health("typo-a", checks=["calibration"]),
        mem.export_memories("typo-a", str(tmp_path / "none.jsonl"), confined=False),
    ):
        assert out["ok"] is True
        assert out["notice"] == "agent 'typo-a' has no rows; known agents: 'a', 'profile-only'", out
    assert "notice" not in mem.recall("a", "what is the capital of Peru")  # empty, but the agent exists
    assert "notice" not in mem.list_memories("profile-only")  # a profile is a row
    assert mem.agent_notice("typo-a", visible_agents=["profile-only"]) == (
        "agent 'typo-a' has no rows; known agents: 'profile-only'"
    )
    assert mem.agent_notice("nobody", visible_agents=[]) == "agent 'nobody' has no rows; known agents: none"
    assert mem.agent_notice("profile-onyl").endswith("(did you mean 'profile-only'?)")


def test_recall_names_only_the_visible_agents_in_its_notice(mem: Memory) -> None:
    """The MCP layer passes an ACL client's readable agents: recall's notice is built once, for it."""
    mem.update_profile("profile-only", "likes tea")
    narrowed = mem.recall("typo-a", "coffee", visible_agents=["profile-only"])
    assert narrowed["notice"] == "agent 'typo-a' has no rows; known agents: 'profile-only'"
    merged = mem.recall_with_context("typo-a", "coffee", [], visible_agents=[])
    assert merged["notice"] == "agent 'typo-a' has no rows; known agents: none"
    with pytest.raises(InvalidInput, match="visible_agents must be a collection"):
        mem.recall("typo-a", "coffee", visible_agents="profile-only")
