"""Issue 17 defect 9 for the operations that need the real model: re-embedding and calibration stop
when their ``Work`` is cancelled, keep whole batches (re-embed) or save nothing (calibration)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_quality_gate import FACTS, minilm_settings

from cpersona.core.work import Work
from cpersona.errors import Cancelled
from cpersona.memory import Memory
from cpersona.services import backfill

pytestmark = pytest.mark.slow


@pytest.fixture
def quiet(tmp_path: Path, minilm_models_dir: Path) -> Iterator[Memory]:
    """No background worker (so only ``reembed`` drains the queue); reembed loads the model itself."""
    with Memory(minilm_settings(tmp_path, minilm_models_dir), start_background=False) as memory:
        yield memory


@pytest.fixture
def mem(tmp_path: Path, minilm_models_dir: Path) -> Iterator[Memory]:
    with Memory(minilm_settings(tmp_path, minilm_models_dir)) as memory:
        assert memory.wait_until_ready(60)
        yield memory


def cancel_at_first_report() -> tuple[Work, list[float]]:
    seen: list[float] = []

    def sink(done: float, total: float | None, message: str | None) -> None:
        seen.append(done)
        work.cancel()

    work = Work(on_progress=sink)
    return work, seen


def test_a_cancelled_reembed_keeps_the_batches_it_wrote_and_leaves_the_rest_queued(quiet: Memory) -> None:
    mem = quiet
    for i in range(3 * backfill.BATCH):
        mem.store("r", f"fact {i} about {FACTS[i % len(FACTS)]}")
    work, seen = cancel_at_first_report()
    with pytest.raises(Cancelled) as caught:
        mem.reembed(work=work)
    details = caught.value.details()
    assert details["processed"] == backfill.BATCH
    assert details["progress"] == {
        "done": backfill.BATCH,
        "total": 3 * backfill.BATCH,
        "unit": "tasks",
        "done_when_cancelled": backfill.BATCH,
    }
    assert seen == [backfill.BATCH]
    assert mem.get_queue_status()["depth"] == 2 * backfill.BATCH  # the rest is still queued
    assert mem.reembed()["processed"] == 2 * backfill.BATCH


def test_a_cancelled_calibration_saves_nothing(mem: Memory) -> None:
    for fact in FACTS:
        mem.store("c", fact)
    mem.drain_queue()
    work, _seen = cancel_at_first_report()
    with pytest.raises(Cancelled) as caught:
        mem.calibrate_threshold("c", work=work)
    assert "nothing was saved" in str(caught.value)
    assert mem.get_recall_precision("c").get("calibrated") in (False, None)
    assert mem.recall("c", "what coffee does Ana like")["gate"]["kind"] == "heuristic"
    assert mem.calibrate_threshold("c", work=Work())["rows"] == len(FACTS)
    assert mem.recall("c", "what coffee does Ana like")["gate"]["kind"] == "calibrated"
