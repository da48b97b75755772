"""The secret guard on the write paths (issue 39): redact (default), refuse and allow, on both engines."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from pg_cluster import BOTH_ENGINES

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.errors import SecretDetected
from cpersona.memory import Memory

pytestmark = BOTH_ENGINES

AWS = "AKIAQ7ZX4TYHGF2LMN8P"
URL = "postgres://app:Tr0ub4dor9@db.example.com/app"
TEXT = f"deploy uses {AWS} against {URL}"
REDACTED = "deploy uses [redacted: aws-access-key] against postgres://app:[redacted: url-password]@db.example.com/app"


@pytest.fixture
def refusing(settings: Settings) -> Iterator[Memory]:
    with Memory(replace(settings, secrets="refuse"), backend=NoEmbeddings()) as mem:
        mem.wait_until_ready(5)
        yield mem


def _content(memory: Memory, ref: str) -> str:
    return str(memory.get_contents("a", [ref])["items"][0]["content"])


def test_store_redacts_before_writing_and_says_kind_and_count(memory: Memory) -> None:
    stored = memory.store("a", TEXT, metadata={"api_key": "zz81kLm0", "note": "ok"})
    assert stored["result"] == "stored"
    assert stored["redacted"] == [  # type: ignore[typeddict-item]
        {"kind": "aws-access-key", "count": 1},
        {"kind": "url-password", "count": 1},
        {"kind": "password-assignment", "count": 1},
    ]
    assert _content(memory, stored["ref"]) == REDACTED
    listed = memory.list_memories("a")["items"][0]
    assert "zz81kLm0" not in json.dumps(listed)
    assert memory.recall("a", AWS)["count"] == 0  # the value is nowhere to be found
    assert memory.recall("a", "deploy")["count"] == 1  # the rest of the memory is


def test_a_clean_store_says_nothing_about_secrets(memory: Memory) -> None:
    assert "redacted" not in memory.store("a", "the meeting moved to Thursday")


def test_refuse_stores_nothing_on_any_write_path(refusing: Memory) -> None:
    with pytest.raises(SecretDetected) as caught:
        refusing.store("a", TEXT)
    assert caught.value.code == "secret_detected" and AWS not in str(caught.value)
    assert refusing.list_memories("a")["total"] == 0
    kept = refusing.store("a", "a clean memory")
    with pytest.raises(SecretDetected):
        refusing.update_memory(kept["id"], f"now with {AWS}", agent_id="a")
    assert _content(refusing, kept["ref"]) == "a clean memory"
    with pytest.raises(SecretDetected):
        refusing.update_profile("a", f"password=Hunter22! and {AWS}")
    assert refusing.get_profile("a")["profile"] is None
    with pytest.raises(SecretDetected):
        refusing.archive_episode("a", f"we rotated {AWS}")
    with pytest.raises(SecretDetected):
        refusing.store("a", "clean text", metadata={"token": "Zx81kLm0qq"})
    assert refusing.list_episodes("a")["total"] == 0
    assert refusing.list_memories("a")["total"] == 1


def test_allow_keeps_todays_behaviour(settings: Settings) -> None:
    with Memory(replace(settings, secrets="allow"), backend=NoEmbeddings()) as mem:
        mem.wait_until_ready(5)
        stored = mem.store("a", TEXT)
        assert "redacted" not in stored and _content(mem, stored["ref"]) == TEXT


def test_update_memory_profile_and_episode_redact(memory: Memory) -> None:
    ref = memory.store("a", "the deploy notes")["ref"]
    updated = memory.update_memory(ref, TEXT, agent_id="a")
    assert updated["redacted"][0] == {"kind": "aws-access-key", "count": 1}  # type: ignore[typeddict-item]
    assert _content(memory, ref) == REDACTED
    profile = memory.update_profile("a", "prefers dark mode; password: Hunter22!")
    assert profile["redacted"] == [{"kind": "password-assignment", "count": 1}]  # type: ignore[typeddict-item]
    assert (
        memory.get_profile("a")["profile"] == "prefers dark mode; password: [redacted: password-assignment]"
    )
    episode = memory.archive_episode("a", f"rotated {AWS} today", keywords=[AWS, "rotation"])
    assert episode["redacted"] == [{"kind": "aws-access-key", "count": 2}]  # type: ignore[typeddict-item]
    row = memory.list_episodes("a")["items"][0]
    assert AWS not in json.dumps(row)


def test_import_redacts_and_drops_the_vector_computed_from_the_secret(
    settings: Settings, tmp_path: Path
) -> None:
    vector = base64.b64encode((np.ones(384) / np.sqrt(384)).astype("<f4").tobytes()).decode()
    lines = [
        {"type": "header", "format": "cpersona-export", "version": 1},
        {
            "type": "memory",
            "agent_id": "a",
            "content": TEXT,
            "embedding": vector,
            "embedding_model": "all-minilm-l6-v2",
            "embedding_dim": 384,
        },
        {"type": "memory", "agent_id": "a", "content": "a clean line", "metadata": {"password": "Hunter22!"}},
        {"type": "episode", "agent_id": "a", "summary": f"we used {AWS}"},
        {
            "type": "profile",
            "agent_id": "a",
            "content": "password=Hunter22!",
            "updated_at": "2025-01-01T00:00:00Z",
        },
    ]
    exports = tmp_path / "exports"
    exports.mkdir()
    (exports / "in.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    with Memory(replace(settings, export_dir=exports), backend=NoEmbeddings()) as mem:
        mem.wait_until_ready(5)
        result = mem.import_memories("in.jsonl")
        assert result["error_count"] == 0, result["errors"]
        assert result["redacted"] == [
            {"kind": "aws-access-key", "count": 2},
            {"kind": "url-password", "count": 1},
            {"kind": "password-assignment", "count": 2},
        ]
        items = mem.list_memories("a")["items"]
        assert AWS not in json.dumps(items) and "Hunter22" not in json.dumps(items)
        secret_row = next(i for i in items if "deploy" in i["content"])
        assert secret_row["embedded"] is False  # re-embedded from the redacted text, not the file's vector
        assert "Hunter22" not in str(mem.get_profile("a")["profile"])
    with Memory(
        replace(settings, export_dir=exports, secrets="refuse", db_path=tmp_path / "other.db", db_url=None),
        backend=NoEmbeddings(),
    ) as mem:
        mem.wait_until_ready(5)
        refused = mem.import_memories("in.jsonl")
        assert refused["error_count"] == 4 and refused["counts"]["memories"]["inserted"] == 0
        assert all("secret" in e["error"] and "Hunter22" not in e["error"] for e in refused["errors"])


def test_export_writes_placeholders_unless_asked_for_the_secrets(settings: Settings, tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    with Memory(replace(settings, secrets="allow", export_dir=exports), backend=NoEmbeddings()) as mem:
        mem.wait_until_ready(5)
        mem.store("a", TEXT, metadata={"token": "Zx81kLm0qq"})
        mem.store("a", "nothing secret here")
        mem.archive_episode("a", f"rotated {AWS}", keywords=[AWS])
        mem.update_profile("a", "password=Hunter22!")
        plain = mem.export_memories("a", "plain.jsonl")
        assert plain["redacted"] == [  # type: ignore[typeddict-item]
            {"kind": "aws-access-key", "count": 3},
            {"kind": "url-password", "count": 1},
            {"kind": "password-assignment", "count": 2},
        ]
        text = (exports / "plain.jsonl").read_text()
        assert (
            AWS not in text
            and "Tr0ub4dor9" not in text
            and "Hunter22" not in text
            and "Zx81kLm0qq" not in text
        )
        assert "nothing secret here" in text and "[redacted: aws-access-key]" in text
        full = mem.export_memories("a", "full.jsonl", include_secrets=True)
        assert "redacted" not in full
        assert AWS in (exports / "full.jsonl").read_text()


def test_merge_redacts_what_arrives_and_refuse_refuses_a_source_holding_secrets(settings: Settings) -> None:
    with Memory(replace(settings, secrets="allow"), backend=NoEmbeddings()) as mem:
        mem.wait_until_ready(5)
        mem.store("old", TEXT)
        mem.store("old", "a clean memory")
    with Memory(replace(settings, secrets="refuse"), backend=NoEmbeddings()) as mem:
        mem.wait_until_ready(5)
        with pytest.raises(SecretDetected) as caught:
            mem.merge_memories("old", "new")
        assert AWS not in str(caught.value) and mem.list_memories("new")["total"] == 0
    with Memory(settings, backend=NoEmbeddings()) as mem:
        mem.wait_until_ready(5)
        merged = mem.merge_memories("old", "new")
        assert merged["redacted"] == [  # type: ignore[typeddict-item]
            {"kind": "aws-access-key", "count": 1},
            {"kind": "url-password", "count": 1},
        ]
        items = mem.list_memories("new")["items"]
        assert len(items) == 2 and AWS not in json.dumps(items)
