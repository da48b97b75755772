"""The corpus shape read without the texts (``recent_lengths``), on both engines: characters, not
bytes, newest first, one scope only."""

from __future__ import annotations

from pg_cluster import BOTH_ENGINES

from cpersona.config import Settings
from cpersona.memory import Memory
from cpersona.storage.scope import Scope
from cpersona.storage.values import NewMemory

pytestmark = BOTH_ENGINES


def test_lengths_are_characters_newest_first_in_scope(settings: Settings) -> None:
    texts = ["short", "日本語の文です", "x" * 700, "é" * 10]
    with Memory(settings, start_background=False) as mem, mem.storage.write() as s:
        for minute, text in enumerate(texts):
            stamp = f"2026-01-01T00:{minute:02d}:00Z"
            s.memories.insert(NewMemory("a", "", "", "", text, None, None, stamp, stamp, None, None, None))
        s.memories.insert(
            NewMemory(
                "b",
                "",
                "",
                "",
                "other agent",
                None,
                None,
                "2026-01-02T00:00:00Z",
                "2026-01-02T00:00:00Z",
                None,
                None,
                None,
            )
        )
        assert s.memories.recent_lengths(Scope("a"), 10) == [10, 700, 7, 5]
        assert s.memories.recent_lengths(Scope("a"), 2) == [10, 700]
        assert s.memories.recent_lengths(Scope("nobody"), 10) == []
