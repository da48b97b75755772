"""The quality gate, calibration, the precision knob and confidence scoring through the Python API,
with the real MiniLM model on a real file (docs/quality-gate.md)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cpersona.config import Settings
from cpersona.embed.runtime.onnx_backend import OnnxBackend
from cpersona.errors import CalibrationUnavailable, InvalidInput, PersistencePaused
from cpersona.memory import Memory
from cpersona.retrieval.calibration import LONG_RECORD_KEYWORD_WEIGHT, SCORING_VERSION
from cpersona.runtime import persistence

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
    "The office wifi password rotates on the first Monday of each month",
    "Carla leads the mobile team and reviews every iOS change",
    "Invoices are archived for seven years in the cold storage bucket",
    "The on-call rotation swaps every Thursday at noon",
    "Grafana alerts for the checkout service go to the payments channel",
    "Dmitri is learning Japanese and practices every morning",
]
EXACT = "Incident note: ERR_PAY_4021 means the card issuer declined the payment"
REAL = [
    "what coffee does Ana like",
    "which region is the Kubernetes cluster in",
    "when is the standup",
    "who reviews iOS changes",
    "what database does staging use",
]
UNRELATED = [
    "how long should I boil an egg",
    "what is the capital of Peru",
    "how do volcanoes erupt",
    "best way to learn the violin",
    "how to grow tomatoes on a balcony",
    "who painted the Mona Lisa",
    "what is the plot of Hamlet",
    "how do I tie a bowline knot",
]


def minilm_settings(tmp_path: Path, models_dir: Path, **extra: Any) -> Settings:
    return Settings(
        db_path=tmp_path / "memory.db",
        embedding_mode="onnx",
        models_dir=models_dir,
        embedding_model="all-minilm-l6-v2",
        update_check=False,
        auto_fetch_model=False,
        recent_recall_penalty=1.0,
        **extra,
    )


def seed(mem: Memory, agent: str = "a") -> None:
    for fact in FACTS:
        mem.store(agent, fact)
    mem.store(agent, EXACT, project_id="shop")
    mem.drain_queue()


@pytest.fixture
def mem(tmp_path: Path, minilm_models_dir: Path, minilm_backend: OnnxBackend) -> Iterator[Memory]:
    # Self-calibration off: these tests calibrate by hand and look at the gate before and after. The
    # session's loaded model, its query kernel settled: one kernel for the probes and every recall (some
    # queries sit between two levels' cuts), and no model load and kernel check per test.
    with Memory(
        minilm_settings(tmp_path, minilm_models_dir, auto_calibrate=False), backend=minilm_backend
    ) as memory:
        assert memory.wait_until_ready(60)
        seed(memory)
        yield memory


def test_uncalibrated_recall_says_the_heuristic_gate_is_in_force(mem: Memory) -> None:
    gate = mem.recall("a", "what coffee does Ana like")["gate"]
    assert gate["kind"] == "heuristic" and "not calibrated" in gate["reason"] and gate["passed"] is True
    assert "CPERSONA_AUTO_CALIBRATE=false" in gate["reason"] and "cpersona calibrate" in gate["reason"]
    assert gate["threshold"] == pytest.approx(0.15) and gate["top_cosine"] > 0.5
    assert mem.recall("a", "")["gate"]["kind"] == "off"
    assert mem.recall("a", "coffee", limit=0)["gate"]["kind"] == "off"
    assert mem.recall_with_context("a", "coffee", [])["gate"]["kind"] == "heuristic"


def test_calibration_persists_and_the_gate_uses_it(mem: Memory) -> None:
    out = mem.calibrate_threshold("a")
    assert out["rows"] == len(FACTS) + 1 and out["gate"]["probes"] >= 60
    t = out["gate"]["thresholds"]
    assert t["strict"] > t["balanced"] > t["lenient"] and out["gate"]["threshold"] == t["balanced"]
    assert out["fingerprint"] == {
        "scoring_version": SCORING_VERSION,
        "model_id": "all-minilm-l6-v2",
        "dimension": 384,
    }
    sidecar = json.loads(Path(out["sidecar"]).read_text())
    assert sidecar["agents"]["a"]["fingerprint"] == out["fingerprint"]
    assert Path(out["sidecar"]) == mem.settings.db_path.with_name("memory.db.calibration.json")
    for query in REAL:
        recalled = mem.recall("a", query)
        assert recalled["gate"]["kind"] == "calibrated" and recalled["gate"]["passed"], (
            query,
            recalled["gate"],
        )
        assert recalled["count"] > 0
    cut = [q for q in UNRELATED if not mem.recall("a", q)["gate"]["passed"]]
    assert len(cut) >= len(UNRELATED) // 2, cut
    for query in cut:
        assert mem.recall("a", query)["results"] == []  # nothing exact in them: empty, not an error


def test_short_facts_are_not_long_records(mem: Memory) -> None:
    gate = mem.calibrate_threshold("a")["gate"]
    assert gate["long_records"] is False and 0 < gate["row_chars_p75"] < 600
    assert "keyword_weight" not in mem.recall("a", "what coffee does Ana like")["search"]


def long_answer(topic: str, n: int) -> str:
    """An assistant answer of ~850 characters on ``topic``, different for each ``n``: long records to
    the gate (over 600), yet within MiniLM's window, so storing it embeds the row and its lead only
    (window blocks would cost three more forwards a row and change nothing the gate reads)."""
    parts = [f"Here is a detailed answer about {topic}, part {n}."]
    parts += [
        f"Point {i}: consider how {topic} relates to step {i * n} and to the option number {i}."
        for i in range(9)
    ]
    return " ".join(parts)


def test_on_long_records_the_gate_stands_down_except_at_strict(
    tmp_path: Path, minilm_models_dir: Path
) -> None:
    """A history of long assistant answers: probes reach what real questions reach, so at balanced and
    lenient precision the calibrated gate keeps the heuristic floor (and says why); strict keeps it."""
    topics = ["sourdough baking", "marathon training", "tax returns", "garden irrigation", "learning Rust"]
    with Memory(minilm_settings(tmp_path, minilm_models_dir, auto_calibrate=False)) as memory:
        assert memory.wait_until_ready(60)
        for n in range(24):
            topic = topics[n % len(topics)]
            memory.store("chat", f"user: can you help me with {topic}? I have a question about it.")
            memory.store("chat", "assistant: " + long_answer(topic, n))
        memory.drain_queue()
        out = memory.calibrate_threshold("chat")["gate"]
        assert out["long_records"] is True and out["row_chars_p75"] >= 600
        recalled = memory.recall("chat", "what is the capital of Peru")
        gate = recalled["gate"]
        assert gate["kind"] == "heuristic" and "long records" in gate["reason"], gate
        assert gate["threshold"] == pytest.approx(0.15)
        watering = memory.recall("chat", "how should I water the garden")
        assert watering["count"] > 0
        # The memory keyword channels weigh less on long records (calibration found them; any precision).
        assert watering["search"]["keyword_weight"] == LONG_RECORD_KEYWORD_WEIGHT
        memory.set_recall_precision("chat", "strict")
        assert memory.recall("chat", "what is the capital of Peru")["gate"]["kind"] == "calibrated"


def test_long_records_weigh_the_keyword_channels_less_before_any_calibration(
    tmp_path: Path, minilm_models_dir: Path
) -> None:
    """A fresh history of long answers is ranked from its first question as a calibrated one is: the
    corpus shape is read from the newest rows until a calibration measures it."""
    with Memory(minilm_settings(tmp_path, minilm_models_dir, auto_calibrate=False)) as memory:
        assert memory.wait_until_ready(60)
        for n in range(14):
            memory.store("chat", "assistant: " + long_answer("garden irrigation", n))
            memory.store("notes", f"note {n}: water the tomatoes on day {n} of the month")
        for n in range(6):  # below calibration's minimum of rows: nothing to measure
            memory.store("few", "assistant: " + long_answer("garden irrigation", n))
        watering = memory.recall("chat", "how should I water the garden")
        assert watering["search"]["keyword_weight"] == LONG_RECORD_KEYWORD_WEIGHT
        assert watering["gate"]["kind"] != "calibrated"
        assert "keyword_weight" not in memory.recall("notes", "water the tomatoes")["search"]  # short rows
        assert "keyword_weight" not in memory.recall("few", "how should I water the garden")["search"]


def test_strict_cuts_more_than_balanced_more_than_lenient(mem: Memory) -> None:
    mem.calibrate_threshold("a")
    # The last three share no word with the corpus and sit between the levels' evidence cuts.
    queries = REAL + UNRELATED + ["music festival tickets", "how is the weather", "what time is lunch"]
    queries += ["when is the next offsite", "when do we get paid"]
    cut: dict[str, int] = {}
    thresholds: dict[str, float] = {}
    for level in ("strict", "balanced", "lenient"):
        result = mem.set_recall_precision("a", level)
        assert result["recalibrated"] is True and result["level"] == level and result["overridden"] is True
        gates = [mem.recall("a", q)["gate"] for q in queries]
        cut[level] = sum(1 for g in gates if not g["passed"])
        thresholds[level] = gates[0]["threshold"]
    assert thresholds["strict"] > thresholds["balanced"] > thresholds["lenient"]
    assert cut["strict"] >= cut["balanced"] >= cut["lenient"] and cut["strict"] > cut["lenient"], cut


def test_precision_knob_beta_override_and_clear(mem: Memory) -> None:
    assert mem.get_recall_precision("a")["overridden"] is False
    raw = mem.set_recall_precision("a", beta=3.0)
    assert raw["beta"] == 3.0 and raw["level"] == "strict" and raw["overridden"] is True
    both = mem.set_recall_precision("a", "lenient", beta=0.7)
    assert (both["level"], both["beta"]) == ("lenient", 0.7)
    cleared = mem.set_recall_precision("a", "")
    assert cleared["overridden"] is False and cleared["level"] == "balanced" and cleared["beta"] == 1.0
    assert cleared["global"] == {"level": "balanced", "beta": 1.0}
    for bad in ({"precision": "extreme"}, {"beta": 0.0}, {"beta": float("inf")}):
        with pytest.raises(InvalidInput):
            mem.set_recall_precision("a", **bad)
    with pytest.raises(InvalidInput):
        mem.calibrate_threshold("a", method="magic")


def test_an_exact_match_of_a_project_scoped_row_is_never_cut(mem: Memory) -> None:
    mem.calibrate_threshold("a", method="zscore", z_factor=10)  # a cut no query below reaches
    for confidence in (False, True):
        mem.settings = mem.settings.with_overrides(confidence_enabled=confidence)
        mem.recaller.pipeline.settings = mem.settings
        recalled = mem.recall("a", "grandma's tomato soup, volcano hikes and ERR_PAY_4021", project_id="shop")
        assert recalled["gate"]["passed"] is False
        assert [r["content"] for r in recalled["results"]] == [EXACT]
        assert recalled["results"][0]["match_reason"]["gate"] == "exact_match"
        whole = mem.recall("a", "card issuer declined the payment", project_id="shop")
        assert EXACT in [r["content"] for r in whole["results"]]


def test_gate_fallback_only_under_confidence(tmp_path: Path, minilm_models_dir: Path) -> None:
    seen = {}
    for confidence in (False, True):
        settings = minilm_settings(
            tmp_path / str(confidence), minilm_models_dir, confidence_enabled=confidence
        )
        with Memory(settings) as memory:
            assert memory.wait_until_ready(60)
            seed(memory)
            memory.calibrate_threshold("a", method="zscore", z_factor=10)
            recalled = memory.recall("a", "volcano soup with kenya beans")  # a keyword hit, below the gate
            assert recalled["gate"]["passed"] is False
            seen[confidence] = recalled["results"]
    assert seen[False] == []
    assert seen[True] and all(r.get("gate_fallback") is True for r in seen[True])
    assert all(r["match_reason"]["signal"] == "confidence" for r in seen[True])


def test_confidence_reorders_by_confidence(tmp_path: Path, minilm_models_dir: Path) -> None:
    orders = {}
    for confidence in (False, True):
        settings = minilm_settings(
            tmp_path / str(confidence),
            minilm_models_dir,
            confidence_enabled=confidence,
            fused_gate_enabled=False,
        )
        with Memory(settings) as memory:
            assert memory.wait_until_ready(60)
            seed(memory)
            rows = memory.recall("a", "payments alerts and deploys", limit=8)["results"]
            reasons = [r["match_reason"] for r in rows]
            if confidence:
                assert {m["signal"] for m in reasons} == {"confidence"}
                scores = [m["score"] for m in reasons]
                assert scores == sorted(scores)  # worst → best by confidence
                assert all(0 <= m["confidence"] <= 1 for m in reasons)
            else:
                assert {m["signal"] for m in reasons} == {settings.recall_mode} and all(
                    "confidence" not in m for m in reasons
                )
            orders[confidence] = [r["id"] for r in rows]
    assert orders[False] != orders[True]


def test_sidecar_survives_a_restart_and_a_changed_fingerprint_recalibrates_in_background(
    tmp_path: Path, minilm_models_dir: Path
) -> None:
    settings = minilm_settings(tmp_path, minilm_models_dir)
    with Memory(settings) as memory:
        assert memory.wait_until_ready(60)
        seed(memory)
        first = memory.calibrate_threshold("a")
        memory.set_recall_precision("a", "strict")
    with Memory(settings) as memory:
        assert memory.wait_until_ready(60) and memory.self_calibration.wait_idle(30)
        state = memory.get_recall_precision("a")
        assert state["level"] == "strict" and state["calibration"]["gate"] == "calibrated"
        assert state["calibration"]["created_at"] >= first["created_at"]
        assert memory.self_calibration.runs == 0  # nothing to redo
    path = Path(first["sidecar"])
    data = json.loads(path.read_text())
    data["agents"]["a"]["fingerprint"]["model_id"] = "some-older-model"
    path.write_text(json.dumps(data))
    started = time.monotonic()
    with Memory(settings) as memory:
        assert time.monotonic() - started < 5  # construction never waits for calibration
        assert memory.wait_until_ready(60) and memory.self_calibration.wait_idle(60)
        assert memory.self_calibration.runs == 1
        after = json.loads(path.read_text())["agents"]["a"]
        assert after["fingerprint"]["model_id"] == "all-minilm-l6-v2"
        assert after["precision"]["level"] == "strict"  # the precision survived the recalibration
        assert memory.recall("a", "what coffee does Ana like")["gate"]["kind"] == "calibrated"


def test_stale_fingerprint_means_heuristic_gate_and_a_health_finding(mem: Memory) -> None:
    mem.calibrate_threshold("a")
    entry = mem.calibration.states.get("a")
    assert entry is not None
    entry["fingerprint"]["dimension"] = 768
    mem.calibration.states.modify("a", lambda _: entry)
    gate = mem.recall("a", "what coffee does Ana like")["gate"]
    assert gate["kind"] == "heuristic" and gate["stale"] is True
    report = mem.check_health("a", checks=["calibration"])
    assert report["status"] == "degraded" and report["checks"]["calibration"]["fingerprint_mismatch"] == ["a"]
    deep = mem.deep_check("a", checks=["stale_calibration"])
    assert deep["findings"] and deep["findings"][0]["check"] == "stale_calibration"
    mem.calibrate_threshold("a")
    assert mem.check_health("a", checks=["calibration"])["status"] == "healthy"


def test_auto_calibrate_at_startup(tmp_path: Path, minilm_models_dir: Path) -> None:
    settings = minilm_settings(tmp_path, minilm_models_dir, auto_calibrate=False)
    with Memory(settings) as memory:
        assert memory.wait_until_ready(60)
        seed(memory)
        seed(memory, "b")
    with Memory(settings.with_overrides(auto_calibrate=True)) as memory:
        assert memory.wait_until_ready(60) and memory.self_calibration.wait_idle(60)
        assert memory.get_recall_precision("a")["calibration"]["gate"] == "calibrated"
        assert memory.get_recall_precision("b")["calibration"]["gate"] == "calibrated"


def test_delete_agent_data_discards_calibration_and_pause_blocks_writes(mem: Memory) -> None:
    mem.calibrate_threshold("a")
    persistence.PROCESS.pause(60)
    try:
        with pytest.raises(PersistencePaused):
            mem.calibrate_threshold("a")
        with pytest.raises(PersistencePaused):
            mem.set_recall_precision("a", "strict")
        assert mem.get_recall_precision("a")["overridden"] is False  # reads still work
    finally:
        persistence.PROCESS.resume()
    deleted = mem.delete_agent_data("a")
    assert deleted["calibration_discarded"] is True
    assert mem.get_recall_precision("a")["calibration"]["calibrated"] is False
    assert mem.delete_agent_data("a")["calibration_discarded"] is False


def test_calibration_needs_a_model_and_rows(tmp_path: Path, minilm_models_dir: Path, memory: Memory) -> None:
    memory.store("k", "keyword only")
    with pytest.raises(CalibrationUnavailable):
        memory.calibrate_threshold("k")
    gate = memory.recall("k", "keyword")["gate"]
    assert gate["kind"] == "off" and "keyword-only" in gate["reason"]
    with Memory(minilm_settings(tmp_path / "small", minilm_models_dir)) as small:
        assert small.wait_until_ready(60)
        small.store("s", "just one row")
        with pytest.raises(CalibrationUnavailable, match="at least 10"):
            small.calibrate_threshold("s")
        saved = small.set_recall_precision("s", "lenient")
        assert saved["recalibrated"] is False and "note" in saved and saved["level"] == "lenient"
