"""store: dedup without upsert, caps, normalisation, rejection."""

from __future__ import annotations

import pytest
from pg_cluster import BOTH_ENGINES

from cpersona.errors import InvalidInput, Rejected
from cpersona.memory import Memory

pytestmark = BOTH_ENGINES


def _refusal(memory: Memory, *args: object, **kwargs: object) -> dict[str, object]:
    """What a refused store reports: the Rejected error's extra fields."""
    with pytest.raises(Rejected) as caught:
        memory.store(*args, **kwargs)  # type: ignore[arg-type]
    assert isinstance(caught.value, InvalidInput) and caught.value.code == "rejected"
    return {"ok": False, **caught.value.details()}


def test_msg_id_dedup_skips_with_existing_id_and_never_upserts(memory: Memory) -> None:
    first = memory.store("a", "original text", msg_id="m1")
    again = memory.store("a", "changed text", msg_id="m1")
    assert first["result"] == "stored"
    assert again == {**again, "result": "skipped", "id": first["id"]}
    assert memory.get_contents("a", [first["ref"]])["items"][0]["content"] == "original text"


def test_content_dedup_is_scoped(memory: Memory) -> None:
    a = memory.store("a", "same words")
    assert memory.store("a", "same words")["result"] == "skipped"
    assert memory.store("a", "same words", channel="c1")["result"] == "stored"
    assert memory.store("a", "same words", project_id="p")["result"] == "stored"
    assert memory.store("b", "same words")["result"] == "stored"
    assert memory.store("a", "  same words  ")["id"] == a["id"]


def test_empty_and_whitespace_content_rejected(memory: Memory) -> None:
    for content in ["", "   ", "\n\t", "\x00\x00"]:
        out = _refusal(memory, "a", content)
        assert out["ok"] is False and out["result"] == "rejected" and out["reason"]
    assert memory.list_memories("a")["total"] == 0


def test_oversize_content_truncated_and_says_so(memory: Memory) -> None:
    out = memory.store("a", "x" * 20000)
    assert out["result"] == "stored" and out["truncated"] is True
    row = memory.get_contents("a", [out["ref"]])["items"][0]
    assert len(row["content"]) == memory.settings.max_content_length


def test_oversize_or_invalid_metadata_refused_not_truncated(memory: Memory) -> None:
    big = _refusal(memory, "a", "fine", metadata={"blob": "y" * 10000})
    bad = _refusal(memory, "a", "fine", metadata="{not json")
    assert big["result"] == "rejected" and "cap" in big["reason"]
    assert bad["result"] == "rejected" and "JSON" in bad["reason"]
    assert memory.list_memories("a")["total"] == 0


def test_nul_bytes_and_lone_surrogates_are_normalised(memory: Memory) -> None:
    out = memory.store("a", "bad\x00byte and \ud800 surrogate")
    row = memory.get_contents("a", [out["ref"]])["items"][0]
    assert row["content"] == "badbyte and \ufffd surrogate"


def test_timestamps_normalised_to_utc(memory: Memory) -> None:
    aware = memory.store("a", "one", timestamp="2026-01-31T10:00:00+09:00")
    naive = memory.store("a", "two", timestamp="2026-01-31T10:00:00")
    bad = _refusal(memory, "a", "three", timestamp="yesterday")
    rows = {r["content"]: r for r in memory.list_memories("a")["items"]}
    assert rows["one"]["timestamp"] == "2026-01-31T01:00:00.000000Z"
    assert rows["two"]["timestamp"] == "2026-01-31T10:00:00.000000Z"
    assert aware["result"] == naive["result"] == "stored"
    assert bad["result"] == "rejected" and "ISO-8601" in bad["reason"]


def test_empty_agent_id_is_a_real_agent(memory: Memory) -> None:
    memory.store("", "belongs to the empty agent")
    assert memory.recall("", "empty agent")["count"] == 1
    assert memory.recall("x", "empty agent")["count"] == 0
