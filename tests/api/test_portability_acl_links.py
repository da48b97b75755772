"""Imports with link and supersede lines under an ACL, on both engines (issue 36 points 8 and 9): a
client that owns an agent round-trips its own export, links included (records without agent_id are
judged by the rows they join), and a supersede line joining two agents' rows is refused as the tools
refuse it."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pg_cluster import BOTH_ENGINES

from cpersona.acl import Client, Level
from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.errors import Forbidden
from cpersona.memory import Memory
from cpersona.portability.grants import FileScope

pytestmark = BOTH_ENGINES


@pytest.fixture
def mem(settings: Settings, tmp_path: Path) -> Iterator[Memory]:
    with Memory(dataclasses.replace(settings, export_dir=tmp_path / "exports"), backend=NoEmbeddings()) as m:
        m.wait_until_ready(5)
        yield m


def scope(grants: dict[str, Level]) -> FileScope:
    return FileScope.of(Client("C", "0" * 64, grants))


def test_an_owner_round_trips_its_export_with_links_and_supersedes(mem: Memory) -> None:
    owner = scope({"c": Level.ADMIN})
    old = mem.store("c", "the shop runs on PostgreSQL")["ref"]
    new = mem.store("c", "the shop runs on SQLite now", supersedes=[old])["ref"]
    mem.declare_associations(
        "c", new, [{"relation": "about", "entity": "Shop"}, {"relation": "follows", "to": old}]
    )
    out = mem.export_memories("c", "c.jsonl", scope=owner)
    assert out["counts"]["supersede_links"] == 1
    mem.delete_agent_data("c")
    assert mem.list_memories("c")["total"] == 0
    back = mem.import_memories("c.jsonl", "c", scope=owner)  # forbidden before: link lines had no agent_id
    assert back["counts"]["supersede_links"]["linked"] == 1 and back["counts"]["links"]["inserted"] == 2
    head = mem.recall("c", "shop runs on", limit=5)["results"]
    assert [r["content"] for r in head] == ["the shop runs on SQLite now"]
    history = mem.get_history(head[0]["ref"], agent_id="c")
    assert [r["content"] for r in history["history"]] == [
        "the shop runs on PostgreSQL",
        "the shop runs on SQLite now",
    ]
    with pytest.raises(Forbidden):  # a client without admin on c still cannot import c's rows into c
        mem.import_memories("c.jsonl", scope=scope({"c": Level.WRITE}))


def test_a_supersede_line_across_agents_is_refused(mem: Memory, tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    lines = [
        {"type": "header", "format": "cpersona-export", "version": 1, "counts": {"supersede_links": 1}},
        {
            "type": "supersede",
            "older": 1,
            "newer": 2,
            "at": "2026-01-01T00:00:00.000000Z",
        },  # as exports order them
        {"type": "memory", "agent_id": "c", "content": "charlie's own fact", "source_id": 1},
        {"type": "memory", "agent_id": "b", "content": "bravo's fact", "source_id": 2},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    out = mem.import_memories(str(path), confined=False)
    assert out["counts"]["supersede_links"] == {"read": 1, "linked": 0, "skipped": 1}
    mine = mem.recall("c", "fact", limit=5)["results"]
    assert [r["content"] for r in mine] == ["charlie's own fact"]  # still current, c's own
    history = mem.get_history(mine[0]["ref"], agent_id="c")
    assert history["current"] == mine[0]["ref"] and history["count"] == 1
