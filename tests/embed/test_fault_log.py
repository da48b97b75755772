"""Offline with no model: the loader retries, but the missing-model WARNING is said once (issue 9, defect 8)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from cpersona.config import Settings
from cpersona.embed.runtime.factory import create_backend
from cpersona.embed.runtime.service import EmbeddingService
from cpersona.runtime.health_state import HealthState


def test_persistent_fault_warns_once_then_debug(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    settings = Settings(
        db_path=tmp_path / "memory.db",
        models_dir=tmp_path / "no-models",
        embedding_mode="onnx",
        embedding_model="all-minilm-l6-v2",
        update_check=False,
        auto_fetch_model=False,
    )
    service = EmbeddingService(create_backend(settings), HealthState(True), retry_seconds=0.05)
    caplog.set_level(logging.DEBUG, logger="cpersona")
    service.start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            repeats = [r for r in caplog.records if "persists" in r.getMessage()]
            if len(repeats) >= 5:
                break
            time.sleep(0.05)
    finally:
        service.stop()
    faults = [r for r in caplog.records if r.getMessage().startswith("embedding fault")]
    warnings = [r for r in faults if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    repeats = [r for r in caplog.records if "persists" in r.getMessage()]
    assert len(repeats) >= 5 and all(r.levelno == logging.DEBUG for r in repeats)
    assert "attempt 2" in repeats[0].getMessage() and "attempt 6" in repeats[4].getMessage()
