"""The ``secrets`` health check (issue 39): rows stored before the guard are found (refs and kinds,
never values) and ``fix=true`` redacts them in place: keyword search, vectors and the file follow."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from pg_cluster import BOTH_ENGINES

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.memory import Memory

pytestmark = BOTH_ENGINES

AWS = "AKIAQ7ZX4TYHGF2LMN8P"
PASSWORD = "Tr0ub4dor9x"


def _seed(settings: Settings) -> dict[str, str]:
    """Rows holding secrets, written as an older version (or CPERSONA_SECRETS=allow) would have."""
    with Memory(replace(settings, secrets="allow"), backend=NoEmbeddings()) as mem:
        mem.wait_until_ready(5)
        refs = {
            "memory": mem.store("a", f"the deploy key is {AWS}")["ref"],
            "locked": mem.store("a", f"db is postgres://app:{PASSWORD}@db.example.com/app")["ref"],
            "metadata": mem.store("a", "a clean sentence", metadata={"api_key": PASSWORD})["ref"],
            "clean": mem.store("a", "the meeting moved to Thursday")["ref"],
            "episode": mem.archive_episode("a", f"we rotated {AWS}", keywords=[AWS])["ref"],
            "other agent": mem.store("b", f"b's key {AWS}")["ref"],
        }
        mem.lock_memory(refs["locked"])
        mem.update_profile("a", f"password={PASSWORD}")
        assert mem.recall("a", AWS)["count"] >= 1
    return refs


def test_check_reports_refs_and_kinds_never_values(settings: Settings, memory: Memory) -> None:
    refs = _seed(settings)
    result = memory.check_health("a", checks=["secrets"])
    (finding,) = result["findings"]
    assert finding["check"] == "secrets" and finding["fixable"] is True
    assert set(finding["refs"]) == {
        refs["memory"],
        refs["locked"],
        refs["metadata"],
        refs["episode"],
        "profile:a//",
    }
    text = json.dumps(result)
    assert AWS not in text and PASSWORD not in text
    assert "aws-access-key" in finding["message"] and "url-password" in finding["message"]


def test_fix_redacts_in_place_locked_rows_included(settings: Settings, tmp_path: Path) -> None:
    refs = _seed(settings)
    with Memory(settings, backend=NoEmbeddings()) as mem:
        mem.wait_until_ready(5)
        fixed = mem.check_health("a", checks=["secrets"], fix=True)
        assert fixed["findings"] == [], fixed["findings"]
        assert fixed["repairs"]["secrets"] == {"fixed": 6, "remaining": 0}
        assert mem.recall("a", AWS)["count"] == 0  # the keyword index followed its table
        assert mem.recall("a", "rotated")["count"] >= 1
        contents = mem.get_contents("a", [refs["memory"], refs["locked"], refs["metadata"]])["items"]
        assert [c["content"] for c in contents] == [
            "the deploy key is [redacted: aws-access-key]",
            "db is postgres://app:[redacted: url-password]@db.example.com/app",
            "a clean sentence",
        ]
        everything = json.dumps(mem.list_memories("a")) + json.dumps(mem.list_episodes("a"))
        assert AWS not in everything and PASSWORD not in everything
        assert mem.get_profile("a")["profile"] == "password=[redacted: password-assignment]"
        # Another agent's row is outside the scope asked about.
        assert mem.check_health("b", checks=["secrets"])["findings"][0]["refs"] == [refs["other agent"]]
        assert mem.check_health(checks=["secrets"], fix=True)["repairs"]["secrets"]["remaining"] == 0


def test_deep_check_reports_the_same_without_fixing(settings: Settings, memory: Memory) -> None:
    refs = _seed(settings)
    result = memory.deep_check("a", checks=["secrets"], fix=True)
    (finding,) = result["findings"]
    assert finding["check"] == "secrets" and refs["memory"] in finding["refs"]
    assert result["fixed"] == 0 and AWS not in json.dumps(result)
    assert memory.check_health("a", checks=["secrets"])["findings"], "deep_check must not have fixed anything"
