"""Block records in an export line (docs/tools.md, export_memories): the lead block (index 0) and the
blocks past the window (1 on) are read back; anything else is refused with the reason."""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np
import pytest

from cpersona.config import Settings
from cpersona.errors import InvalidInput
from cpersona.portability.records import parse_record

DIM = 4


def _vector() -> str:
    return base64.b64encode(np.ones(DIM, dtype="<f4").tobytes()).decode()


def _line(blocks: list[dict]) -> dict:
    return {
        "type": "memory",
        "agent_id": "a",
        "content": "x" * 400,
        "embedding": _vector(),
        "embedding_model": "m",
        "embedding_dim": DIM,
        "blocks": blocks,
    }


def _parse(blocks: list[dict], tmp_path: Path):
    settings = Settings(db_path=tmp_path / "m.db", update_check=False, auto_fetch_model=False)
    return parse_record(_line(blocks), target_agent=None, settings=settings, now="2026-01-01T00:00:00Z")


def test_the_lead_and_the_window_blocks_are_read_back(tmp_path: Path) -> None:
    parsed = _parse(
        [
            {"index": 0, "start": 0, "end": 40, "embedding": _vector()},
            {"index": 1, "start": 30, "end": 400, "embedding": _vector()},
        ],
        tmp_path,
    )
    assert [(b.index, b.start, b.end) for b in parsed.record.blocks] == [(0, 0, 40), (1, 30, 400)]


@pytest.mark.parametrize(
    "bad",
    [
        {"index": -1, "start": 0, "end": 40},
        {"index": 49, "start": 0, "end": 40},
        {"index": 0, "start": 40, "end": 40},
        {"index": True, "start": 0, "end": 40},
    ],
)
def test_a_bad_block_is_refused_with_the_reason(bad: dict, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="block"):
        _parse([{**bad, "embedding": _vector()}], tmp_path)
