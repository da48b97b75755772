"""Renamed negatives through the Python API with the real MiniLM model, on both engines: questions about
someone else's life, asked with this agent's people's names, pass a top-cosine gate on the names alone;
the calibrated gate keys on evidence (cosine + coverage of the query's non-name words) and cuts them
(docs/quality-gate.md "What it keys on"). Also: arbitrary query text through a calibrated gate."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pg_cluster import BOTH_ENGINES
from renamed_chat import DIALOGUE, REAL, RENAMED

from cpersona.config import Settings
from cpersona.memory import Memory

pytestmark = [pytest.mark.slow, BOTH_ENGINES]


def store_chat(mem: Memory, agent: str = "a") -> None:
    for who, text in DIALOGUE:
        assert mem.store(agent, f"{who}: {text}", timestamp="2024-05-04T10:00:00Z")["result"] == "stored"
    mem.drain_queue()


@pytest.fixture
def mem(tmp_path: Path, new_db_url, minilm_backend) -> Iterator[Memory]:
    settings_ = Settings(
        db_path=tmp_path / "m.db",
        db_url=new_db_url(),
        embedding_mode="onnx",
        embedding_model="all-minilm-l6-v2",
        recent_recall_penalty=1.0,
        update_check=False,
        auto_fetch_model=False,
    )
    with Memory(settings_, backend=minilm_backend) as memory:
        assert memory.wait_until_ready(60)
        store_chat(memory)
        yield memory


def test_calibration_finds_the_names_and_keys_the_gate_on_evidence(mem: Memory) -> None:
    out = mem.calibrate_threshold("a")
    gate = out["gate"]
    assert gate["kind"] == "query_evidence" and sorted(gate["entities"]) == ["Aurelia", "Bastian"]
    # the probes' evidence sits above their top cosines: coverage adds to it
    assert gate["probe_evidence"]["p90"] > gate["probe_top_cosine"]["p90"]
    for question in REAL:
        recalled = mem.recall("a", question)
        assert recalled["gate"]["keyed_on"] == "evidence" and recalled["gate"]["passed"], (
            question,
            recalled["gate"],
        )
        assert recalled["count"] > 0


def test_renamed_negatives_pass_on_cosine_but_the_evidence_cuts_them(mem: Memory) -> None:
    out = mem.calibrate_threshold("a")
    cosine_cut = out["gate"]["probe_top_cosine"]["p90"]  # where a top-cosine gate cuts at balanced
    verdicts: dict[str, dict[str, Any]] = {q: mem.recall("a", q) for q in RENAMED}
    # on the top cosine alone every one of them would pass: the names lift it
    assert all(r["gate"]["top_cosine"] >= cosine_cut for r in verdicts.values()), verdicts
    cut = [q for q, r in verdicts.items() if not r["gate"]["passed"]]
    assert len(cut) >= 2, {q: r["gate"] for q, r in verdicts.items()}
    for question in cut:
        assert (
            verdicts[question]["results"] == []
            and verdicts[question]["gate"]["evidence"] < verdicts[question]["gate"]["threshold"]
        )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(max_size=300))
def test_any_query_text_through_the_calibrated_gate(mem: Memory, query: str) -> None:
    if mem.get_recall_precision("a")["calibration"]["gate"] != "calibrated":
        mem.calibrate_threshold("a")
    out = mem.recall("a", query)
    assert out["ok"] is True and out["count"] == len(out["results"]) <= 10
    gate = out["gate"]
    if gate["keyed_on"] == "evidence":
        assert gate["evidence"] >= gate["top_cosine"] - 1e-6
        assert gate["passed"] == (gate["evidence"] >= gate["threshold"])
