"""Supersede lines on import (issue 36 point 2), on both engines: a long chain (newest pair first, as
the issue's file) links whole in linear time, batch by batch, and a cancel stops it at a batch
boundary with whole links only, saying how many were written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pg_cluster import BOTH_ENGINES

from cpersona.core.work import Work
from cpersona.errors import Cancelled
from cpersona.memory import Memory
from cpersona.portability import importer
from cpersona.storage.scope import Scope

pytestmark = [BOTH_ENGINES, pytest.mark.slow]

LINKS = 3 * importer.BATCH + 100  # four batches


def chain_file(path: Path, links: int) -> Path:
    """``links + 1`` memories of agent 'a' in one chain, its supersede lines newest pair first."""
    head = {"type": "header", "format": "cpersona-export", "version": 1, "agent_id": "a"}
    lines: list[dict[str, Any]] = [head]
    lines += [
        {"type": "supersede", "older": n, "newer": n + 1, "at": "2026-01-01T00:00:00.000000Z"}
        for n in range(links, 0, -1)
    ]
    lines += [
        {"type": "memory", "agent_id": "a", "content": f"plan version {n}", "source_id": n}
        for n in range(1, links + 2)
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def superseded(memory: Memory) -> int:
    with memory.storage.read() as session:
        return len(session.supersede.hidden_ids(Scope(agent_id="a")))


def test_a_long_chain_links_whole_and_names_its_head(memory: Memory, tmp_path: Path) -> None:
    out = memory.import_memories(str(chain_file(tmp_path / "chain.jsonl", LINKS)), confined=False)
    assert out["counts"]["supersede_links"] == {"read": LINKS, "linked": LINKS, "skipped": 0}
    assert superseded(memory) == LINKS
    now = memory.recall("a", "plan version", limit=3)["results"]
    assert [r["content"] for r in now] == [f"plan version {LINKS + 1}"]
    with memory.storage.read() as session:
        first = min(session.memories.ids_in_period(Scope(agent_id="a"), None, None))
    history = memory.get_history(first, agent_id="a")
    assert history["current"] == now[0]["ref"] and history["truncated"] is True  # 1,601 rows > 1,000
    again = memory.import_memories(str(tmp_path / "chain.jsonl"), confined=False)  # nothing new
    assert again["counts"]["supersede_links"] == {"read": LINKS, "linked": 0, "skipped": LINKS}


class CancelInLinks:
    """Cancels its ``Work`` at the first progress report of the supersede links."""

    def __init__(self) -> None:
        self.work = Work(on_progress=self)

    def __call__(self, done: float, total: float | None, message: str | None) -> None:
        if message and "supersede links" in message:
            self.work.cancel()


def test_a_cancel_stops_the_links_at_a_batch_boundary(memory: Memory, tmp_path: Path) -> None:
    sink = CancelInLinks()
    with pytest.raises(Cancelled) as caught:
        memory.import_memories(
            str(chain_file(tmp_path / "chain.jsonl", LINKS)), confined=False, work=sink.work
        )
    counts = caught.value.details()["counts"]
    assert counts["memories"]["inserted"] == LINKS + 1  # the rows were written before the links
    assert counts["supersede_links"]["linked"] == importer.BATCH  # one whole batch, then it stopped
    assert superseded(memory) == importer.BATCH
