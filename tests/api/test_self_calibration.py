"""Self-calibration through the Python API with the real MiniLM model on real files: the schedule (first at
the minimum size, again after growing by the factor), the cheap trigger, CPERSONA_AUTO_CALIBRATE=false,
one calibration at a time with two stores on one file, and a state that cannot be saved."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from long_answer import LONG

from cpersona.config import Settings
from cpersona.memory import Memory
from cpersona.retrieval.calibration import LONG_ROW_CHARS, MIN_ROWS
from cpersona.services import self_calibration
from cpersona.services.self_calibration import (
    GROWTH_FACTOR,
    LONG_RECORD_GROWTH_FACTOR,
    next_size,
    trigger_for,
)
from cpersona.storage.sqlite.calibration import sidecar_path

pytestmark = pytest.mark.slow

FACTS = [
    f"Fact number {i}: the {word} team ships on {day}"
    for i, (word, day) in enumerate(
        [
            ("payments", "Monday"),
            ("mobile", "Tuesday"),
            ("search", "Wednesday"),
            ("billing", "Thursday"),
            ("platform", "Friday"),
            ("growth", "Monday"),
            ("infra", "Tuesday"),
            ("data", "Wednesday"),
            ("security", "Thursday"),
            ("design", "Friday"),
            ("support", "Monday"),
            ("sales", "Tuesday"),
            ("legal", "Wednesday"),
            ("finance", "Thursday"),
            ("research", "Friday"),
            ("ops", "Monday"),
        ]
    )
]
FP = {"scoring_version": 1, "model_id": "m", "dimension": 3}


def settings_for(db: Path, models_dir: Path, **extra: Any) -> Settings:
    return Settings(
        db_path=db,
        embedding_mode="onnx",
        models_dir=models_dir,
        embedding_model="all-minilm-l6-v2",
        update_check=False,
        auto_fetch_model=False,
        **extra,
    )


@pytest.fixture
def mem(tmp_path: Path, minilm_models_dir: Path) -> Iterator[Memory]:
    with Memory(settings_for(tmp_path / "memory.db", minilm_models_dir)) as memory:  # defaults: auto on
        assert memory.wait_until_ready(60)
        yield memory


def store(memory: Memory, facts: list[str], agent: str = "a") -> None:
    for fact in facts:
        assert memory.store(agent, fact)["result"] == "stored"


def test_the_schedule_in_numbers() -> None:
    calibrated = {"fingerprint": FP, "gate": {"probe_top_cosines": [0.1]}, "rows": 100}
    assert next_size(None, FP) == MIN_ROWS and next_size(calibrated, FP) == round(100 * GROWTH_FACTOR) == 105
    assert trigger_for(None, MIN_ROWS - 1, FP, growth=True) is None
    assert trigger_for(None, MIN_ROWS, FP, growth=True) == "first"
    assert trigger_for(calibrated, 104, FP, growth=True) is None
    assert trigger_for(calibrated, 105, FP, growth=True) == "growth"
    stale = {**calibrated, "fingerprint": {**FP, "dimension": 768}}
    assert trigger_for(stale, 10, FP, growth=False) == "fingerprint"  # kept with auto off
    assert trigger_for(None, 500, FP, growth=False) is None
    assert trigger_for(calibrated, 10**6, None, growth=True) is None  # no model: nothing to measure


def test_long_records_outside_strict_are_recalibrated_at_the_larger_factor() -> None:
    # Their calibrated threshold stands down at balanced and lenient: recalibrating at 1.05 only
    # refreshed the row-length measure, for twice the background CPU.
    long = {
        "fingerprint": FP,
        "gate": {"probe_top_cosines": [0.1], "row_chars_p75": LONG_ROW_CHARS},
        "rows": 100,
    }
    short = {**long, "gate": {"probe_top_cosines": [0.1], "row_chars_p75": LONG_ROW_CHARS - 1}}
    assert LONG_RECORD_GROWTH_FACTOR == 1.25
    assert next_size(long, FP, level="balanced") == next_size(long, FP, level="lenient") == 125
    assert next_size(long, FP, level="strict") == 105  # strict keeps the calibrated gate: kept fresh
    assert next_size(long, FP) == 105  # the level unknown: the calibrated gate may be in force
    assert next_size(short, FP, level="balanced") == 105
    assert trigger_for(long, 124, FP, growth=True, level="balanced") is None
    assert trigger_for(long, 125, FP, growth=True, level="balanced") == "growth"
    assert trigger_for(long, 105, FP, growth=True, level="strict") == "growth"


def test_a_history_of_long_answers_is_recalibrated_at_the_larger_factor(mem: Memory) -> None:
    answers = [f"Answer {i}: " + LONG for i in range(40)]
    store(mem, answers[:MIN_ROWS])
    assert mem.self_calibration.wait_idle(60)
    entry = mem.calibration.states.get("a")
    assert entry is not None and entry["gate"]["row_chars_p75"] >= LONG_ROW_CHARS
    due = next_size(entry, mem.calibration.current_fingerprint(), level="balanced")
    assert due == 13  # 10 x 1.25, rounded up; 1.05 makes 11
    store(mem, answers[MIN_ROWS : due - 1])
    assert mem.self_calibration.wait_idle(60)
    assert mem.self_calibration.runs == 1
    store(mem, answers[due - 1 : due])
    assert mem.self_calibration.wait_idle(60)
    state = mem.get_recall_precision("a")["calibration"]
    assert state["rows"] == due and state["trigger"] == "growth" and mem.self_calibration.runs == 2
    # At strict the calibrated gate is in force: the agent is due again at 1.05x.
    mem.set_recall_precision("a", "strict")
    strict_due = next_size(
        mem.calibration.states.get("a"), mem.calibration.current_fingerprint(), level="strict"
    )
    assert strict_due == due + 1 < round(due * LONG_RECORD_GROWTH_FACTOR)
    store(mem, answers[due:strict_due])
    assert mem.self_calibration.wait_idle(60)
    assert mem.get_recall_precision("a")["calibration"]["rows"] == strict_due


def test_an_agent_calibrates_itself_at_the_minimum_size_and_again_after_growing(mem: Memory) -> None:
    store(mem, FACTS[: MIN_ROWS - 1])
    assert mem.self_calibration.wait_idle(30)
    gate = mem.recall("a", "when does the payments team ship")["gate"]
    assert gate["kind"] == "heuristic" and "self-calibration runs in the background" in gate["reason"]
    assert mem.self_calibration.runs == 0

    store(mem, FACTS[MIN_ROWS - 1 : MIN_ROWS])
    assert mem.self_calibration.wait_idle(60)
    state = mem.get_recall_precision("a")["calibration"]
    assert state["gate"] == "calibrated" and state["rows"] == MIN_ROWS and state["trigger"] == "first"
    assert mem.recall("a", "when does the payments team ship")["gate"]["kind"] == "calibrated"

    # Below the next size the trigger is a counter: no row count in the store, no calibration.
    due = next_size(mem.calibration.states.get("a"), mem.calibration.current_fingerprint())
    counted = mem.self_calibration.counts_taken
    store(mem, FACTS[MIN_ROWS : due - 1])
    assert mem.self_calibration.wait_idle(30)
    assert mem.self_calibration.counts_taken == counted and mem.self_calibration.runs == 1
    store(mem, FACTS[due - 1 : due])
    assert mem.self_calibration.wait_idle(60)
    state = mem.get_recall_precision("a")["calibration"]
    assert state["rows"] == due and state["trigger"] == "growth" and mem.self_calibration.runs == 2


def test_agents_found_needing_it_at_start_up_are_calibrated(tmp_path: Path, minilm_models_dir: Path) -> None:
    db = tmp_path / "memory.db"
    with Memory(settings_for(db, minilm_models_dir, auto_calibrate=False)) as memory:
        assert memory.wait_until_ready(60)
        store(memory, FACTS[:12], "early")
        assert memory.self_calibration.wait_idle(30) and memory.self_calibration.runs == 0
        assert memory.get_recall_precision("early")["calibration"]["calibrated"] is False
        assert "CPERSONA_AUTO_CALIBRATE=false" in memory.recall("early", "payments")["gate"]["reason"]
    with Memory(settings_for(db, minilm_models_dir)) as memory:
        assert memory.wait_until_ready(60) and memory.self_calibration.wait_idle(60)
        assert memory.self_calibration.runs == 1
        assert memory.get_recall_precision("early")["calibration"]["trigger"] == "first"


def test_a_short_lived_process_never_calibrates_in_the_background(
    tmp_path: Path, minilm_models_dir: Path
) -> None:
    with Memory(settings_for(tmp_path / "m.db", minilm_models_dir), self_calibration=False) as memory:
        assert memory.wait_until_ready(60)
        store(memory, FACTS[:12])
        assert memory.self_calibration.wait_idle(5) and memory.self_calibration.runs == 0
        assert memory.calibrate()["calibrated"][0]["trigger"] == "first"  # `cpersona calibrate` does it


def test_two_stores_on_one_file_never_calibrate_at_once_and_keep_each_others_agents(
    tmp_path: Path, minilm_models_dir: Path
) -> None:
    db = tmp_path / "memory.db"
    settings = settings_for(db, minilm_models_dir)
    spans: list[tuple[float, float, str]] = []
    guard = threading.Lock()
    with Memory(settings) as one, Memory(settings) as two:  # two flock holders, as two processes are
        for memory in (one, two):
            assert memory.wait_until_ready(60)
            original = memory.calibration._calibrate

            def slow(*args: Any, _original: Any = original, **kwargs: Any) -> dict[str, Any]:
                started = time.monotonic()
                time.sleep(0.3)  # widen the window in which a second calibration could start
                out = _original(*args, **kwargs)
                with guard:
                    spans.append((started, time.monotonic(), args[0]))
                return out

            memory.calibration._calibrate = slow  # type: ignore[method-assign]
        writers = [
            threading.Thread(target=store, args=(one, FACTS[:12], "left")),
            threading.Thread(target=store, args=(two, FACTS[:12], "right")),
            threading.Thread(target=store, args=(one, FACTS[:6], "shared")),
            threading.Thread(target=store, args=(two, [f + " (again)" for f in FACTS[:6]], "shared")),
        ]
        for t in writers:
            t.start()
        for t in writers:
            t.join()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            one.self_calibration.notice_rows()  # the other store's rows: look at every agent
            two.self_calibration.notice_rows()
            assert one.self_calibration.wait_idle(60) and two.self_calibration.wait_idle(60)
            if all(one.calibration.states.get(a) for a in ("left", "right", "shared")):
                break
            time.sleep(0.5)
        spans.sort()
        assert {agent for *_, agent in spans} == {"left", "right", "shared"}
        for (_, end, _a), (start, _, _b) in zip(spans, spans[1:], strict=False):
            assert start >= end, spans  # never two calibrations at once on this file
    on_disk = json.loads(sidecar_path(db).read_text())["agents"]
    assert set(on_disk) == {"left", "right", "shared"} and on_disk["shared"]["rows"] >= MIN_ROWS


def test_a_calibration_state_that_cannot_be_saved_never_fails_a_recall(
    tmp_path: Path, minilm_models_dir: Path
) -> None:
    db = tmp_path / "memory.db"
    sidecar_path(db).mkdir(parents=True)  # a folder where the sidecar file should be: unreadable, unwritable
    with Memory(settings_for(db, minilm_models_dir)) as memory:
        assert memory.wait_until_ready(60)
        store(memory, FACTS[:12])
        assert memory.self_calibration.wait_idle(60) and memory.self_calibration.runs == 1
        recalled = memory.recall("a", "when does the payments team ship")
        assert recalled["ok"] and recalled["count"] > 0
        assert recalled["gate"]["kind"] == "calibrated"  # in force in this process
        out = memory.calibrate_threshold("a")
        assert out["persisted"] is False and out["storage"].startswith("calibration_unsaved")
        report = memory.check_health(checks=["calibration"])
        assert report["status"] == "degraded" and report["checks"]["calibration"]["unsaved"]
        assert "cannot be saved" in report["findings"][0]["message"]
        runs = memory.self_calibration.runs
        # No loop of retries: a pass that counts every agent (as after an import) finds the agent, whose
        # entry could not be saved, calibrated at its size, and leaves it (a store would be growth here).
        memory.self_calibration.notice_rows()
        assert memory.self_calibration.wait_idle(30) and memory.self_calibration.runs == runs


def test_the_growth_factor_is_the_documented_one() -> None:
    assert self_calibration.GROWTH_FACTOR == 1.05
    text = (Path(__file__).resolve().parents[2] / "docs" / "quality-gate.md").read_text()
    assert "**1.05 ×**" in text and "Why 1.05" in text and "Self-calibration" in text
